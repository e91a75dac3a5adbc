-- 0006, SQLite equivalent of mysql/0006_marker_fence.sql (active_since is julianday('now')).
CREATE TABLE marker_fence (
    id           INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    gen          INTEGER NOT NULL,
    active       INTEGER NOT NULL,
    active_since REAL    NULL
);

INSERT INTO marker_fence (id, gen, active) VALUES (1, 0, 0);
