package sqlstore

import (
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite's memory, kept mapped.
//
// modernc.org/sqlite allocates through modernc.org/libc, whose allocator serves blocks of up to 16 KiB from
// 64 KiB pages shared by the blocks of one size class, and unmaps a page the moment its last block is freed.
// A B-tree page split in SQLite allocates page-sized buffers and frees them when it is done, so with nothing
// else alive in their class every split paid an mmap and a munmap: a quarter of the CPU of a hot SKU's group
// commit on SQLite (BENCHMARKS.md, "Group commit of a hot SKU's deducts"). pinSQLiteMemory keeps one block of
// each class from 1 to 16 KiB allocated for the life of the process (about 31 KiB), so each class keeps a
// page mapped and a split's buffers come from its free slots. A block asks 64 bytes less than its class so
// that SQLite's own size header keeps it in that class.
var pinSQLiteMemory = sync.OnceFunc(func() {
	tls := libc.NewTLS()
	for log := 7; log <= 14; log++ {
		sqlite3.Xsqlite3_malloc64(tls, uint64(1)<<log-64) // never freed
	}
})
