package activities

// Error types carried by non-retryable Temporal application errors, so workflows and the API can tell
// business outcomes apart without parsing messages.
const (
	ErrTypeSoldOut     = "SoldOut"
	ErrTypeCompensated = "Compensated"
	ErrTypeUnknownSKU  = "UnknownSKU"
	ErrTypeNotLoaded   = "NotLoaded"
	ErrTypeBadInput    = "BadInput"
	// ErrTypeLimitExceeded carries the *ordersaga.LimitExceededError as its details.
	ErrTypeLimitExceeded = "LimitExceeded"
	// ErrTypeAmountOverflow: an amount out of ordersaga's bounds (ordersaga.ErrAmountOverflow) — an order priced
	// past MaxAmountCents (a price stored before the bound), or a payment amount the payments store refuses.
	// Running it again gives the same answer.
	ErrTypeAmountOverflow = "AmountOverflow"
)
