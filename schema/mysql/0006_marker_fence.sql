-- 0006: the markers' fence. While Redis is unreachable the order API places orders through the database alone
-- (RESERVE_DB_FALLBACK) and cannot write their keys' idempotency markers; the sold-out fast path, which reads
-- Redis only, would then take a key with an order for a key without state. A placement that could not mark
-- its key raises the fence (active = 1, gen + 1) after its claim and before its order starts; every API
-- process reads the row at least every second and keeps the fast path off while it is raised (or unread).
-- Once Redis answers, a process re-marks every key within the retention and lowers the fence only if gen is
-- unchanged since it began (sqlstore.ClearMarkerFence). active_since is the database's clock (NOW(6)): the
-- one clock every process shares, for the wait that lets every process see a fence just raised.
CREATE TABLE marker_fence (
    id           TINYINT     NOT NULL,
    gen          BIGINT      NOT NULL,
    active       TINYINT     NOT NULL,
    active_since DATETIME(6) NULL,
    PRIMARY KEY (id),
    CONSTRAINT chk_marker_fence_one_row CHECK (id = 1)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO marker_fence (id, gen, active) VALUES (1, 0, 0);
