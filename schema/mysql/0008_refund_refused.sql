-- 0008: a refund the payment provider refused for good (it will refuse it again: not to be retried). The
-- sender records the refusal on the refund's row (refund_refused_at, refund_refused_reason: the provider's
-- code and reason) instead of retrying it for ever; a refused refund leaves the outbox until a person sends
-- it again (RequeueRefund clears both columns) or the provider's answer marks it sent, which keeps them as
-- history. The outbox index (refund_sent_at, refunded_at) still bounds every scan: refused refunds are among
-- the rows not sent.

ALTER TABLE payments ADD COLUMN refund_refused_at DATETIME(6) NULL;

ALTER TABLE payments ADD COLUMN refund_refused_reason VARCHAR(255) NULL;
