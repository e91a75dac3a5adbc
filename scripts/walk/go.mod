module github.com/ordersaga/ordersaga/scripts/walk

go 1.26
