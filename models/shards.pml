/*
 * shards.pml: a Promela model of ONE SKU whose Redis stock is split into shards, for spin. It is written before
 * the code, as its specification: the code is to follow it step for step (models/README.md, "shards.pml").
 *
 * The design modelled
 * -------------------
 * Redis. The SKU's Redis stock lives in S shards (here S = 2). A shard is an independent key group, possibly on
 * another Redis Cluster master: its counter avail, its holds hash (order -> units), its per-order markers and its
 * version. Each Lua script touches ONE shard atomically (one d_step here); nothing is atomic across shards.
 * Marker of (shard, order): none, H:<qty> held, C:<qty> confirmed, R:<qty> released, T tombstone, P "passed"
 * (the order's walk found this shard short and went on) and X "passed, then released" (a release found P here
 * and went on). Every script that writes bumps the shard's version (P and X included, as designed; -DP_NO_BUMP
 * writes both without a bump and checks that safety does not need it).
 *
 * Database. One row per SKU (stock) and the ledger per (order, SKU): deduct takes the units iff there is no
 * RESTORE row and stock >= qty, once per order (a second deduct answers duplicate while the order awaits payment
 * unrestored, else refused); restore gives them back iff a DEDUCT stands, else writes a tombstone RESTORE that
 * refuses a later deduct; a PAID order's restore gives nothing back ("sold"); MarkPaid only while the order
 * awaits payment and nothing is restored.
 *
 * reserve.lua with the 'walk' flag, on shard s for order o (one atomic step):
 *   marker H or C -> duplicate (stop: the order holds already)
 *   marker R, T or X -> refused (stop: compensated)
 *   marker P      -> pass (go on to the next shard)
 *   no marker     -> avail >= qty: avail -= qty, holds[o] = qty, marker H, version++, reserved (stop)
 *                    avail <  qty: marker P, version++, pass (go on)
 *   (a missing counter answers not-loaded: the attempt fails and retries; Redis data loss is not modelled)
 * The walk of order o visits the shards in a fixed order that depends only on the order: start = hash(o) mod S,
 * then cyclic (here order k starts at shard k mod S). Passing the last shard answers "sold out". An order's
 * shard count S is fixed for its life (it is in its workflow input). The P marker is what makes a retried or
 * late attempt safe: every attempt of the order walks the same order, so once an attempt passed a shard no
 * attempt ever holds there, and the one shard where an attempt holds is the first one no attempt passed.
 *
 * release.lua walks the SAME path as the order's walk, from its start shard, one script per shard:
 *   P      -> marker X, go on to the next shard (a walk went on from here: what it holds lies beyond)
 *   X      -> go on (an earlier attempt of the release passed here)
 *   none   -> tombstone T, stop ("tombstone": no walk went past here, and a walk that comes later is refused)
 *   H or C -> give back (avail += qty, drop the hold, marker R), stop          [C: the database restored first]
 *   R or T -> duplicate, stop
 *   'sold' mode (the order is PAID): H -> confirm (drop the hold, marker C), stop; C -> kept, stop; the rest
 *   as above. Every shard went on (each was P or X) -> done: the order never held.
 * Why that is enough: a walk moves past shard j only after writing or seeing P at j, so an H or C at j means no
 * walk ever passed j, and a shard without a marker has no walk beyond it (and the T stops the ones to come).
 * The release stops at the first shard that is none, H, C, R or T. X must not stop it: an attempt that turned
 * P into X may have timed out before the shard beyond (that is why P becomes X, not T).
 * confirm.lua (after the deduct committed) walks the same path: P -> go on; H -> C (drop the hold), stop;
 *   C -> duplicate, stop; none -> stop (no hold); R, T or X -> refused, stop.
 * Reconciliation's leak pass (-DSWEEP_RELEASE; it acts on an order whose workflow is gone and uses the SKU's
 * shard count): release.lua on EVERY shard, in any order: H or C -> give back (R) ('sold': H -> C, C kept);
 *   P or none -> T; X, R or T -> duplicate.
 *
 * The workflow: reserve (up to TRIES attempts; an attempt may time out between any two of its shard steps and
 * go on later, in flight (Net), concurrently with the retry, the deduct and the compensation; an attempt's
 * answer may be lost after it landed), then deduct (which may time out and land later); if the reserve answered
 * sold out or refused, or every attempt timed out, or the deduct did not answer taken -> compensate; else confirm
 * (best effort: it may time out and land at any later moment, in flight, while the workflow goes on; a deduct
 * that lands late, taken, confirms in flight too; a confirm in flight lands before the end, standing in for the
 * reconciliation's confirm of a left hold, which is not modelled), then either paid (end) or the deadline (a
 * payment may be in flight and land first) -> compensate. Compensate: restore the database (if the deduct was
 * started), then release ('sold' mode if the restore answered sold), retried: up to RTRIES attempts, each but
 * the last may time out between two of its shard steps and go on in flight (one at a time) while the retry walks
 * again from the start shard; the last one answers. With -DSWEEP_RELEASE the last attempt is the leak pass (the
 * workflow is gone after its attempts timed out).
 *
 * Reconciliation's rebalance (RECON passes during the run, -DRECON=k, and a final pass once quiet):
 *   1. snapshot each shard (one MULTI on its master, one step each): avail, which orders hold, which orders have
 *      a C marker, and the version;
 *   2. read the database's truth (one step): T = db.stock - units of the snapshot's holds whose order has no
 *      standing DEDUCT - units of the snapshot's C markers whose order's DEDUCT is restored (pending releases:
 *      the database has those units back and the release will give them back to Redis too);
 *   3. choose targets t_i >= 0 with sum t_i = T (any policy: the model lets every split happen); T < 0: nothing;
 *   4. per shard, a compare-and-set script on that shard's version (the shard is left alone for this pass when
 *      its version moved since its snapshot): first LOWER every shard whose target is below its snapshot's avail,
 *      then, only if every lowering succeeded, RAISE every shard whose target is above it. A shard whose target
 *      equals its snapshot's avail is not written (and not compared). At most one rebalance of the SKU runs at a
 *      time (the final one included; see -DRECONCILERS).
 *
 * Properties (Monitor: every state; and at the points named):
 *   P1 no oversell: db.stock in [0, INIT], the ledger accounts for every unit (INIT - stock = deducted -
 *      restored), units of standing deducts <= INIT; a held order's deduct always finds the stock.
 *   P2 at most one H or C marker per order over all shards at any time, and an order takes Redis stock on at
 *      most one shard ever (ghost took[o]).
 *   P3 I3 across shards: sum avail + units of holds whose order has no standing DEDUCT <= db.stock, and the
 *      stronger form with the pending releases counted too (I3P), in every state.
 *   P4 once the order's compensation's release answered, the order holds nothing in Redis (no hold; no H or C
 *      marker unless 'sold': then its one C stays), and a reserve step that runs after that takes nothing.
 *   P5 a walk answers "sold out" only if, at some moment of the order's reserve (from its first attempt's first
 *      step to this answer: a retry answers from the P markers its earlier attempts wrote), the shards' total
 *      avail was below qty (ghost dip), or some counter rose meanwhile (ghost rose: a release gave units back, or
 *      a rebalance raised a shard). Without a rise the total only falls, so this is "the total was below qty at
 *      the end of the walk". With a rise it cannot be stronger: a unit that comes back, or is moved, onto a shard
 *      the walk already passed is not seen (-DP5_STRICT, which drops "or rose", fails: models/README.md). By
 *      construction each shard was short when it was passed. A walk answers sold out only to an order that holds
 *      nowhere (a duplicate answers as the first).
 *   P6 once quiet: no hold left; unless the reconciler wrote, sum avail == db.stock; PAID <=> standing deduct.
 *      After the final rebalance: sum avail == db.stock, no holds, every unit sold (PAID) or back.
 *
 * Broken variants (each must fail): -DBUG_NO_PASS_MARKER (the release stops at the shard the walk passed
 * unmarked), -DBUG_RELEASE_ONE_SHARD (the release stops after the start shard, even on P or X),
 * -DBUG_RELEASE_STOPS_AT_X (a release that finds X stops), -DBUG_PASS_BECOMES_T (the release turns P into T, so
 * a retry stops there), -DBUG_CONFIRM_STOPS_AT_P (the confirm stops at the first P), -DBUG_RAISE_BEFORE_LOWER,
 * -DBUG_STOP_AT_FIRST_SHARD, -DBUG_NO_PENDING (the truth ignores pending releases), -DBUG_RAISE_AFTER_FAILED_LOWER
 * (the raise runs although a lowering was refused), -DBUG_OWED_NO_DEDUCT_ROW (a hold is owed only while its order
 * has no DEDUCT row: a restored order's hold is not counted).
 *
 * Sizes: -DINIT (2), -DAV0 (units initially on shard 0: INIT), -DDRIFT (units Redis starts short of: 0),
 * -DRECON (1), -DTRIES (2), -DINFLIGHT (2: every reserve attempt may stay in flight), -DRTRIES (2: release
 * attempts; 1: the release always answers), -DLATE_CONFIRM (1; 0: the confirm always answers), -DRTIMEOUT_ANYWHERE
 * (a release attempt may also time out before its first shard step; default: only between two of its steps), -DN
 * (2; 3 by hand), -DRECONCILERS (1: rebalances never overlap; 2 with -DDRIFT=1 fails I3, so the design needs one
 * rebalancer per SKU at a time). The defaults together are a by-hand run (models/README.md); the test runs
 * smaller sets.
 * -DSWEEP_RELEASE: the last release attempt is the leak pass's (every shard). -DBY_DELTA: an alternative write
 * (DECRBY/INCRBY of the difference, no version compared), by hand. -DP_NO_BUMP: P and X written without a version
 * bump, by hand.
 * Not modelled: Redis data loss (not-loaded, the cold load of a shard), qty > 1 (fragmentation), TTLs, fixHolds
 * and the leak pass's choice of orders (no workflow dies here but with -DSWEEP_RELEASE), a change of the SKU's
 * shard count, three or more shards.
 */

#define S 2            /* shards */
#ifndef N
#define N 2            /* orders (2; 3 only for the by-hand check of P5 in models/README.md) */
#endif
#define Q 1            /* every order's qty */
#ifndef INIT
#define INIT 2         /* units of the SKU (database and Redis) */
#endif
#ifndef AV0
#define AV0 INIT       /* the initial split: AV0 units on shard 0, the rest on shard 1 (default: shard 1 empty) */
#endif
#ifndef RECON
#define RECON 1        /* rebalances during the run (a final one always runs once quiet) */
#endif
#ifndef DRIFT
#define DRIFT 0        /* units Redis starts short of (taken from shard 0): a drift the rebalance must repair */
#endif
#ifndef RECONCILERS
#define RECONCILERS 1  /* rebalancers that may run at once, each RECON passes (2 over-promise: models/README.md) */
#endif
#ifndef INFLIGHT
#define INFLIGHT 2     /* reserve attempts of one order that may be in flight at once (1: one, the others are dropped) */
#endif
#ifndef TRIES
#define TRIES 2        /* reserve attempts of the workflow */
#endif
#ifndef RTRIES
#define RTRIES 2       /* release attempts of the compensation (all but the last may time out and go on in flight) */
#endif
#ifndef LATE_CONFIRM
#define LATE_CONFIRM 1 /* the confirm may time out and land later, in flight (0: it always answers at once) */
#endif

/* markers: none, held, confirmed, released, tombstone, passed, passed then released */
mtype = { NONE, H, C, R, T, P, X };
/* orders.status */
mtype = { SNONE, AWAIT, PAID };
/* RESTORE ledger row: none, tombstone (qty 0), qty */
mtype = { RNONE, RTOMB, RQTY };

/* answers */
#define OK        1
#define DUP       2
#define SOLDOUT   3
#define REFUSED   5
#define TIMEOUT   6
#define TOMBSTONE 7
#define KEPT      8
#define PASS      9
#define DONE      10     /* a release or confirm that went on past every shard, or a confirm that found no marker */

/* ---- Redis: per shard ---- */
short avail[S];          /* inv:{SKU}:s<i>:avail */
byte  hold[S * N];       /* inv:{SKU}:s<i>:holds: order -> units (0 = no field), at IX(shard, order) */
mtype mk[S * N];         /* inv:{SKU}:s<i>:o:{ORDER} */
#define IX(s, o) ((s) * N + (o))
/* inv:{SKU}:s<i>:ver only grows and is only compared with a rebalance's snapshot of it: what is kept is, per
 * rebalancer and shard, whether it holds a snapshot of it and whether it moved since (exact, as in reservation.pml) */
byte  snapping;          /* bit rk*S + s: rebalancer rk (0; 1 with -DRECONCILERS=2) holds a snapshot of shard s */
byte  vmoved;            /* bit rk*S + s: shard s's version moved since rebalancer rk's snapshot of it */
#define SBIT(s)     (1 << (rk * S + (s)))                 /* (rk: the rebalancer's number, in its scope) */
#define BUMP(s)     vmoved = vmoved | (snapping & ((1 << (s)) | (1 << (S + (s)))))
#define SNAP(s)     snapping = snapping | SBIT(s); vmoved = vmoved & ~SBIT(s)
#define VER_SAME(s) ((vmoved & SBIT(s)) == 0)
#define UNSNAP(s)   snapping = snapping & ~SBIT(s); vmoved = vmoved & ~SBIT(s)
#ifdef P_NO_BUMP
#define PBUMP(s)    skip
#else
#define PBUMP(s)    BUMP(s)
#endif

/* ---- database ---- */
short stock = INIT;      /* inventory.stock */
bool  ded[N];            /* stock_ledger DEDUCT row */
mtype rst[N];            /* stock_ledger RESTORE row */
mtype st[N];             /* orders.status */

/* ---- the world ---- */
byte p_walk[N];          /* a reserve attempt in flight: 0 none, else 1 + the position in the walk of its next shard */
#if INFLIGHT > 1
byte p_walk2[N];         /* -DINFLIGHT=2: a second one (both attempts of the workflow may be in flight at once) */
#endif
byte r_walk[N];          /* a release attempt in flight: 0 none, else 1 + the position in the walk of its next shard */
bool r_sold[N];          /* ... in 'sold' mode */
byte c_walk[N];          /* a confirm attempt in flight: 0 none, else 1 + the position of its next shard */
bool p_deduct[N];        /* a deduct in flight */
bool p_paid[N];          /* a MarkPaid in flight */
byte orders_left;        /* workflows not finished */
byte busy;               /* Net and Reconciler processes still running */
bool quiet;              /* no workflow left: in-flight steps land now or never */
bool fin;                /* the final rebalance ran */

/* ---- ghosts (for the properties only) ---- */
byte took[N];            /* bit s: the order took Redis stock on shard s */
bool released[N];        /* the order's compensation's release has finished (an attempt answered) */
bool recon_wrote;        /* a rebalance wrote a counter (the final pass's writes come after the quiet checks) */
/* P5, bit o: per order, from the moment its reserve began (its first attempt's first step) */
byte wact;               /* the order's reserve has begun (its walks, the attempts in flight included, may run) */
byte dip;                /* the shards' total avail was below Q at some moment since */
byte rose;               /* a counter was raised since (a release gave units back, or a rebalance raised one) */

#define SUMAV        (avail[0] + avail[1])
#define HC(s, o)     (mk[IX(s, o)] == H || mk[IX(s, o)] == C)
#define HOLDS(o)     (HC(0, o) + HC(1, o))
#define STANDING(o)  (ded[o] && rst[o] != RQTY)
#define NET(o)       ((ded[o] - (rst[o] == RQTY)) * Q)
#define OWES(o)      ((hold[IX(0, o)] + hold[IX(1, o)]) * (1 - STANDING(o)))
#define PEND(o)      ((rst[o] == RQTY) * ((mk[IX(0, o)] == C) + (mk[IX(1, o)] == C)) * Q)
#define ONEBIT(b)    (((b) & ((b) - 1)) == 0)
#define NOHOLD(o)    (hold[IX(0, o)] == 0 && hold[IX(1, o)] == 0)
#define SOLDKEPT(o)  ((st[o] == PAID) == STANDING(o))
#define PAIDU(o)     ((st[o] == PAID) * Q)

#define ONE(o)       (HOLDS(o) <= 1 && ONEBIT(took[o]))
#define STANDU(o)    (STANDING(o) * Q)
#if N == 2
#define SUMO(F) (F(0) + F(1))
#define ALLO(F) (F(0) && F(1))
#elif N == 3
#define SUMO(F) (F(0) + F(1) + F(2))
#define ALLO(F) (F(0) && F(1) && F(2))
#else
#error "N must be 2 or 3"
#endif

/* P1 */
#define DB_OK   (stock >= 0 && stock <= INIT && INIT - stock == SUMO(NET) && SUMO(STANDU) <= INIT)
/* P2 */
#define ONE_OK  ALLO(ONE)
#define AV_OK   (avail[0] >= 0 && avail[1] >= 0)
/* P3: I3 across shards, and with the pending releases (restored, still C) counted */
#define I3_OK   (SUMAV + SUMO(OWES) <= stock)
#define I3P_OK  (SUMAV + SUMO(OWES) + SUMO(PEND) <= stock)
#define SAFE    (DB_OK && ONE_OK && AV_OK && I3_OK && I3P_OK)
/* P6 */
#define SETTLED (SUMAV == stock && ALLO(NOHOLD) && ALLO(SOLDKEPT) && stock + SUMO(PAIDU) == INIT)

/* P5's ghosts: the order's reserve begins; the total avail falls below Q (every step that lowers a counter); a
 * counter rises (every step that raises one) */
#define RESERVE_BEGINS(o) wact = wact | (1 << (o)); if :: SUMAV < Q -> dip = dip | (1 << (o)) :: else -> skip fi
#define DIPS              if :: SUMAV < Q -> dip = dip | wact :: else -> skip fi
#define RISES             rose = rose | wact

/* ============================ Redis scripts, one shard each ============================ */

/* reserve.lua with the 'walk' flag, on shard s (a variable, not an expression) for order o */
inline walk_lua(s, o, res) {
  if
  :: HC(s, o) -> res = DUP
  :: mk[IX(s, o)] == R || mk[IX(s, o)] == T || mk[IX(s, o)] == X -> res = REFUSED
  :: mk[IX(s, o)] == P -> res = PASS
  :: mk[IX(s, o)] == NONE && avail[s] >= Q ->
     avail[s] = avail[s] - Q; hold[IX(s, o)] = Q; mk[IX(s, o)] = H; BUMP(s); res = OK;
     assert(!released[o]);                             /* P4: a late reserve after the release takes nothing */
     took[o] = took[o] | (1 << s);
     DIPS
  :: mk[IX(s, o)] == NONE && avail[s] < Q ->
#ifdef BUG_NO_PASS_MARKER
     res = PASS                                        /* broken: the shard found short is not marked */
#else
     mk[IX(s, o)] = P; PBUMP(s); res = PASS
#endif
#ifdef BUG_STOP_AT_FIRST_SHARD
     ; res = SOLDOUT                                   /* broken: the first shard found short ends the walk */
#endif
  fi
}

/* a walk answers sold out (P5, and a duplicate answers as the first) */
inline sold_out(o) {
  assert(HOLDS(o) == 0);
#ifdef P5_STRICT
  assert(dip & (1 << (o)))                                /* (fails: models/README.md) */
#else
  assert((dip & (1 << (o))) || (rose & (1 << (o))))
#endif
}

/* one step of order o's walk, at its pos-th shard (o + pos) mod S: res OK, DUP, REFUSED (the walk stops),
 * PASS (pos moved on) or SOLDOUT (every shard passed) */
inline walk_step(o, pos, sh, res) {
  sh = (o + pos) % S;
  walk_lua(sh, o, res);
  if
  :: res == PASS && pos + 1 < S -> pos++
  :: res == PASS && pos + 1 >= S -> res = SOLDOUT
  :: else -> skip
  fi;
  if :: res == SOLDOUT -> sold_out(o) :: else -> skip fi;
  sh = 0
}

/* confirm.lua on shard s, one step of the confirm's walk: PASS (go on) or its answer (stop) */
inline confirm_lua(s, o, res) {
  if
#ifndef BUG_CONFIRM_STOPS_AT_P
  :: mk[IX(s, o)] == P -> res = PASS                      /* the walk went on from here: so does the confirm */
#else
  :: mk[IX(s, o)] == P -> res = DONE                      /* broken: the first P ends the confirm */
#endif
  :: mk[IX(s, o)] == H -> hold[IX(s, o)] = 0; mk[IX(s, o)] = C; BUMP(s); res = OK
  :: mk[IX(s, o)] == C -> res = DUP
  :: mk[IX(s, o)] == NONE -> res = DONE                   /* no hold (no walk went past here) */
  :: mk[IX(s, o)] == R || mk[IX(s, o)] == T || mk[IX(s, o)] == X -> res = REFUSED
  fi
}

/* one step of order o's confirm at its pos-th shard: PASS (pos moved on) or the answer (every shard passed: DONE) */
inline confirm_step(o, pos, sh, res) {
  sh = (o + pos) % S;
  confirm_lua(sh, o, res);
  if
  :: res == PASS && pos + 1 < S -> pos++
  :: res == PASS && pos + 1 >= S -> res = DONE
  :: else -> skip
  fi;
  sh = 0
}

/* release.lua on shard s (the path release, one step of its walk); sold = 'sold' mode: PASS (go on) or the
 * answer (stop) */
inline release_lua(s, o, sold, res) {
  if
#ifndef BUG_PASS_BECOMES_T
  :: mk[IX(s, o)] == P -> mk[IX(s, o)] = X; PBUMP(s); res = PASS  /* a walk went on from here: so does the release */
#else
  :: mk[IX(s, o)] == P -> mk[IX(s, o)] = T; BUMP(s); res = PASS   /* broken: a retry of the release stops here */
#endif
#ifndef BUG_RELEASE_STOPS_AT_X
  :: mk[IX(s, o)] == X -> res = PASS                      /* an earlier attempt of the release passed here */
#else
  :: mk[IX(s, o)] == X -> res = DUP                       /* broken: read as "released" */
#endif
  :: mk[IX(s, o)] == NONE -> mk[IX(s, o)] = T; BUMP(s); res = TOMBSTONE   /* no walk went past: nothing beyond */
  :: mk[IX(s, o)] == R || mk[IX(s, o)] == T -> res = DUP
  :: mk[IX(s, o)] == C && sold -> res = KEPT
  :: mk[IX(s, o)] == H && sold -> hold[IX(s, o)] = 0; mk[IX(s, o)] = C; BUMP(s); res = KEPT
  :: (mk[IX(s, o)] == H || mk[IX(s, o)] == C) && !sold ->
     avail[s] = avail[s] + Q; hold[IX(s, o)] = 0; mk[IX(s, o)] = R; BUMP(s); res = OK; RISES
  fi
}

/* one step of order o's release at its pos-th shard: PASS (pos moved on) or the answer (every shard passed:
 * DONE, the order never held) */
inline release_step(o, pos, sh, sold, res) {
  sh = (o + pos) % S;
  release_lua(sh, o, sold, res);
  if
#ifndef BUG_RELEASE_ONE_SHARD
  :: res == PASS && pos + 1 < S -> pos++
  :: res == PASS && pos + 1 >= S -> res = DONE
#else
  :: res == PASS -> res = DONE                            /* broken: only the shard the walk starts at */
#endif
  :: else -> skip
  fi;
  sh = 0
}

#ifdef SWEEP_RELEASE
/* the reconciliation's leak pass, per shard (every shard of the SKU, in any order, any order's markers) */
inline sweep_lua(s, o, sold) {
  if
  :: mk[IX(s, o)] == NONE || mk[IX(s, o)] == P -> mk[IX(s, o)] = T; BUMP(s)
  :: mk[IX(s, o)] == R || mk[IX(s, o)] == T || mk[IX(s, o)] == X -> skip   /* duplicate */
  :: mk[IX(s, o)] == C && sold -> skip                                     /* kept */
  :: mk[IX(s, o)] == H && sold -> hold[IX(s, o)] = 0; mk[IX(s, o)] = C; BUMP(s)
  :: (mk[IX(s, o)] == H || mk[IX(s, o)] == C) && !sold ->
     avail[s] = avail[s] + Q; hold[IX(s, o)] = 0; mk[IX(s, o)] = R; BUMP(s); RISES
  fi
}
#endif

#ifdef SWEEP_RELEASE
#define PATH_ATTEMPT (tries + 1 < RTRIES)   /* the last attempt is the leak pass's */
#else
#define PATH_ATTEMPT true
#endif

#if defined(RTIMEOUT_ANYWHERE) || defined(SWEEP_RELEASE)
#define RTIMEOUT_AT(pos) true
#else
#define RTIMEOUT_AT(pos) (pos > 0)
#endif

/* P4: once its compensation's release answered, the order holds nothing in Redis ('sold': no hold; its C stays) */
#define RELEASED_OK(o, sold) (NOHOLD(o) && (sold || HOLDS(o) == 0))

/* ============================ database transactions ============================ */

inline deduct_tx(o, res) {
  if
  :: ded[o] && st[o] == AWAIT && rst[o] == RNONE -> res = DUP
  :: ded[o] && !(st[o] == AWAIT && rst[o] == RNONE) -> res = REFUSED
  :: !ded[o] && rst[o] != RNONE -> res = REFUSED          /* a RESTORE (or its tombstone) refuses it */
  :: !ded[o] && rst[o] == RNONE && stock < Q -> res = SOLDOUT
  :: !ded[o] && rst[o] == RNONE && stock >= Q -> ded[o] = true; st[o] = AWAIT; stock = stock - Q; res = OK
  fi
}

inline restore_tx(o, sold) {
  sold = false;
  if
  :: st[o] == PAID -> sold = true                         /* Sold: nothing given back */
  :: st[o] != PAID && rst[o] != RNONE -> skip             /* duplicate */
  :: st[o] != PAID && rst[o] == RNONE && ded[o] -> rst[o] = RQTY; stock = stock + Q
  :: st[o] != PAID && rst[o] == RNONE && !ded[o] -> rst[o] = RTOMB
  fi
}

inline mark_paid_tx(o, res) {
  if
  :: st[o] == AWAIT && rst[o] == RNONE -> st[o] = PAID; res = OK
  :: else -> res = REFUSED                                /* refunded */
  fi
}

/* ============================ reconciliation's rebalance ============================ */

/* r_av: the snapshot's counters; r_hb, r_cb: the snapshot's holds and C markers (bit IX(shard, order)); then the
 * plan: r_t the targets, r_lo / r_hi the shards to lower / to raise (bit s) */
#define RB_LOCALS short r_av[S], r_t[S], tr; byte r_hb, r_cb, r_lo, r_hi, ri

/* the snapshot of shard s: one MULTI on its master (GET avail, HGETALL holds, the markers, GET version) */
inline rb_snapshot(s) {
  d_step {
    r_av[s] = avail[s];
    for (ri : 0 .. N - 1) {
      if :: hold[IX(s, ri)] > 0 -> r_hb = r_hb | (1 << IX(s, ri)) :: else -> skip fi;
      if :: mk[IX(s, ri)] == C -> r_cb = r_cb | (1 << IX(s, ri)) :: else -> skip fi
    };
    ri = 0;
    SNAP(s)
  }
}

/* the database's truth (one read), then the targets and the plan (local) */
inline rb_plan() {
  atomic {
    tr = stock;
    for (ri : 0 .. N - 1) {
      /* a hold of the snapshot whose order has no standing DEDUCT: the database still counts its units */
#ifndef BUG_OWED_NO_DEDUCT_ROW
      if :: (r_hb & ((1 << IX(0, ri)) | (1 << IX(1, ri)))) && !STANDING(ri) -> tr = tr - Q :: else -> skip fi;
#else
      /* broken: "no DEDUCT yet" read as no DEDUCT row (a restored order's hold is not counted) */
      if :: (r_hb & ((1 << IX(0, ri)) | (1 << IX(1, ri)))) && !ded[ri] -> tr = tr - Q :: else -> skip fi;
#endif
#ifndef BUG_NO_PENDING
      /* a C marker of the snapshot whose order's DEDUCT is restored: its release will give the units back */
      if :: (r_cb & ((1 << IX(0, ri)) | (1 << IX(1, ri)))) && rst[ri] == RQTY -> tr = tr - Q :: else -> skip fi
#endif
    };
    r_hb = 0; r_cb = 0;
    if
    :: tr >= 0 ->
       r_t[0] = 0; do :: r_t[0] < tr -> r_t[0]++ :: break od;    /* the split: any */
       r_t[1] = tr - r_t[0];
       for (ri : 0 .. S - 1) {
         if
         :: r_t[ri] < r_av[ri] -> r_lo = r_lo | (1 << ri)
         :: r_t[ri] > r_av[ri] -> r_hi = r_hi | (1 << ri)
         :: else -> UNSNAP(ri); r_t[ri] = 0                       /* not written, not compared */
         fi;
#ifdef BY_DELTA
         if :: r_t[ri] < r_av[ri] -> r_t[ri] = r_av[ri] - r_t[ri] :: else -> r_t[ri] = r_t[ri] - r_av[ri] fi
#else
         skip
#endif
       }
    :: else -> UNSNAP(0); UNSNAP(1); r_t[0] = 0; r_t[1] = 0       /* a truth below 0: nothing written */
    fi;
    r_av[0] = 0; r_av[1] = 0; tr = 0; ri = 0
  }
}

/* the per-shard compare-and-set script on shard i: set its counter to its target iff its version did not move
 * since the snapshot; a lowering refused cancels every raise of the pass */
inline rb_cas(i, lowering) {
#ifdef BY_DELTA
  /* -DBY_DELTA, an alternative (models/README.md): no version compared; a lowering DECRBY the difference iff the
   * counter still has it, a raise INCRBY the difference */
  if
  :: lowering && avail[i] >= r_t[i] -> avail[i] = avail[i] - r_t[i]; BUMP(i); DIPS; recon_wrote = true
  :: !lowering -> avail[i] = avail[i] + r_t[i]; BUMP(i); RISES; recon_wrote = true
  :: lowering && avail[i] < r_t[i] -> UNSNAP(0); UNSNAP(1); r_hi = 0; r_t[0] = 0; r_t[1] = 0
  fi;
  UNSNAP(i); r_t[i] = 0
#else
  if
  :: VER_SAME(i) ->
     if :: r_t[i] > avail[i] -> RISES :: else -> skip fi;
     avail[i] = r_t[i]; BUMP(i); DIPS; recon_wrote = true
  :: else ->                                              /* left alone for this pass */
#ifndef BUG_RAISE_AFTER_FAILED_LOWER
     if :: lowering -> UNSNAP(0); UNSNAP(1); r_hi = 0; r_t[0] = 0; r_t[1] = 0 :: else -> skip fi
#else
     skip                                                 /* broken: the raises go ahead */
#endif
  fi;
  UNSNAP(i); r_t[i] = 0
#endif
}

#ifdef BUG_RAISE_BEFORE_LOWER
#define LOWER_NOW (r_hi == 0)                             /* broken: every raise first, then the lowerings */
#define RAISE_NOW true
#else
#define LOWER_NOW true
#define RAISE_NOW (r_lo == 0)                             /* every lowering first (shard 0, then 1), then the raises */
#endif

inline rebalance() {
  rb_snapshot(0);
  rb_snapshot(1);
  rb_plan();
  do
  :: d_step { LOWER_NOW && (r_lo & 1) -> r_lo = r_lo & ~1; rb_cas(0, true) }
  :: d_step { LOWER_NOW && r_lo == 2 -> r_lo = 0; rb_cas(1, true) }
  :: d_step { RAISE_NOW && (r_hi & 1) -> r_hi = r_hi & ~1; rb_cas(0, false) }
  :: d_step { RAISE_NOW && r_hi == 2 -> r_hi = 0; rb_cas(1, false) }
  :: r_lo == 0 && r_hi == 0 -> break
  od
}

proctype Reconciler(byte rk) {
  byte budget = RECON;
  RB_LOCALS;
  do
  :: budget > 0 && !quiet -> budget--; rebalance()
  :: quiet || budget == 0 -> break
  od;
  atomic { busy-- }
}

/* ============================ the order's workflow ============================ */

proctype Order(byte o) {
  byte res, pos, tries, sh;
#ifdef SWEEP_RELEASE
  byte vis;
#endif
  bool sold, ded_started;

  /* reserve: the walk, up to TRIES attempts */
  d_step { tries = 1; RESERVE_BEGINS(o) };
  do
  :: atomic { walk_step(o, pos, sh, res);
       if
       :: res == PASS -> res = 0
       :: else -> pos = 0;
          if
          :: res == OK || res == DUP -> res = TIMEOUT     /* the answer is lost after the attempt landed */
          :: true -> skip
          fi;
          if
          :: res == TIMEOUT && tries < TRIES -> tries++; res = 0               /* the retry begins */
          :: res == OK || res == DUP -> res = 0; tries = 0; ded_started = true; goto deduct
          :: else -> res = 0; tries = 0; goto compensate  /* sold out, refused, every attempt timed out */
          fi
       fi
     }
  :: atomic {                                             /* the attempt times out before its next shard step: */
       if                                                 /* it goes on in flight (never, past INFLIGHT of them) */
       :: p_walk[o] == 0 -> p_walk[o] = pos + 1
#if INFLIGHT > 1
       :: p_walk[o] != 0 && p_walk2[o] == 0 -> p_walk2[o] = pos + 1
#endif
       :: else -> skip
       fi;
       pos = 0;
       if
       :: tries < TRIES -> tries++                        /* the retry begins */
       :: else -> tries = 0; goto compensate              /* every attempt timed out */
       fi
     }
  od;

deduct:
  if
  :: d_step { deduct_tx(o, res); assert(res != SOLDOUT) } /* P1: a held order's deduct finds the stock */
  :: d_step { p_deduct[o] = true; res = TIMEOUT }         /* times out: lands later or never */
  fi;
  if
  :: res == OK || res == DUP -> res = 0
  :: else -> res = 0; goto compensate
  fi;

  /* confirm: the walk's path from its start shard, best effort: the attempt may time out before any of its shard
   * steps and go on in flight, landing at any later moment (-DLATE_CONFIRM=0: never), while the workflow goes on */
  do
  :: atomic { confirm_step(o, pos, sh, res);
       if
       :: res == PASS -> res = 0
       :: else -> res = 0; pos = 0; goto await
       fi
     }
#if LATE_CONFIRM
  :: atomic { c_walk[o] = pos + 1; pos = 0; goto await }
#endif
  od;

  /* await the payment, or the deadline */
await:
  if
  :: d_step { mark_paid_tx(o, res); assert(res == OK); res = 0 }; goto finished
  :: p_paid[o] = true                                     /* a payment in flight as the deadline fires */
  :: skip                                                 /* the deadline (or a cancel) */
  fi;

compensate:
  if
  :: ded_started -> d_step { restore_tx(o, sold) }
  :: else -> sold = false
  fi;
  /* release: the walk's path from its start shard, up to RTRIES attempts: an attempt may time out between two of
   * its shard steps (-DRTIMEOUT_ANYWHERE: before any) and go on in flight (one at a time), concurrently with the
   * retry, which walks again from the start shard; the last one answers */
  do
  :: atomic { PATH_ATTEMPT -> release_step(o, pos, sh, sold, res);
       if
       :: res == PASS -> res = 0
       :: else -> assert(RELEASED_OK(o, sold)); released[o] = true; res = 0; pos = 0; tries = 0; sold = false;
          goto finished
       fi
     }
  :: d_step { tries + 1 < RTRIES && RTIMEOUT_AT(pos) ->
       if :: r_walk[o] == 0 -> r_walk[o] = pos + 1; r_sold[o] = sold :: else -> skip fi;
       tries++; pos = 0
     }
#ifdef SWEEP_RELEASE
  :: !PATH_ATTEMPT -> break
#endif
  od;
#ifdef SWEEP_RELEASE
  /* the workflow is gone after its attempts timed out: the reconciliation's leak pass releases every shard */
  do
  :: d_step { !(vis & 1) -> sh = 0; sweep_lua(sh, o, sold); vis = vis | 1; sh = 0 }
  :: d_step { !(vis & 2) -> sh = 1; sweep_lua(sh, o, sold); vis = vis | 2; sh = 0 }
  :: d_step { vis == 3 -> vis = 0; assert(RELEASED_OK(o, sold)); released[o] = true; sold = false; tries = 0 }; break
  od;
#endif

finished:
  skip;
  d_step { ded_started = false; orders_left-- }
}

/* attempts left in flight by a timeout: each goes on at any later moment, or never (a walk, one shard at a time) */
proctype Net(byte o) {
  byte res, pos, sh;
  do
  :: d_step { p_walk[o] > 0 -> pos = p_walk[o] - 1; walk_step(o, pos, sh, res);
              if
              :: res == PASS -> p_walk[o] = pos + 1
              :: else -> p_walk[o] = 0
              fi;
              res = 0; pos = 0 }
#if INFLIGHT > 1
  :: d_step { p_walk2[o] > 0 -> pos = p_walk2[o] - 1; walk_step(o, pos, sh, res);
              if
              :: res == PASS -> p_walk2[o] = pos + 1
              :: else -> p_walk2[o] = 0
              fi;
              res = 0; pos = 0 }
#endif
  :: d_step { r_walk[o] > 0 -> pos = r_walk[o] - 1; release_step(o, pos, sh, r_sold[o], res);
              if
              :: res == PASS -> r_walk[o] = pos + 1
              :: else -> r_walk[o] = 0; r_sold[o] = false
              fi;
              res = 0; pos = 0 }
  :: d_step { c_walk[o] > 0 -> pos = c_walk[o] - 1; confirm_step(o, pos, sh, res);
              if
              :: res == PASS -> c_walk[o] = pos + 1
              :: else -> c_walk[o] = 0
              fi;
              res = 0; pos = 0 }
  :: d_step { p_deduct[o] -> p_deduct[o] = false; deduct_tx(o, res);
#if LATE_CONFIRM
              /* a deduct that lands taken confirms the holds, in flight too (the workflow compensates meanwhile) */
              if :: (res == OK || res == DUP) && c_walk[o] == 0 -> c_walk[o] = 1 :: else -> skip fi;
#endif
              res = 0 }
  :: d_step { p_paid[o] -> p_paid[o] = false; mark_paid_tx(o, res); res = 0 }
  :: quiet && c_walk[o] == 0 -> break                   /* a confirm in flight lands (LATE_CONFIRM) */
  od;
  atomic { busy-- }
}

/* the invariants, checked in every state */
active proctype Monitor() {
end: atomic { !SAFE -> assert(DB_OK); assert(ONE_OK); assert(AV_OK); assert(I3_OK); assert(I3P_OK) }
}

init {
  byte o, rk;                                             /* the final pass: rebalancer 0 */
  RB_LOCALS;
  atomic {
    avail[0] = AV0 - DRIFT; avail[1] = INIT - AV0;
    for (o : 0 .. S * N - 1) { mk[o] = NONE }
    for (o : 0 .. N - 1) { st[o] = SNONE; rst[o] = RNONE }
    orders_left = N; busy = N + RECONCILERS;
    for (o : 0 .. N - 1) { run Order(o); run Net(o) }
    for (o : 1 .. RECONCILERS) { run Reconciler(o - 1) }
    o = 0
  }
  (orders_left == 0);
  quiet = true;
  (busy == 0);
  /* P6, quiet: no hold left (every hold was confirmed or released); the protocol alone keeps Redis in line */
  assert(ALLO(NOHOLD));
  assert(recon_wrote || SUMAV + DRIFT == stock);
  assert(ALLO(SOLDKEPT));
  /* the final rebalance, then every unit is sold (PAID) or back on both sides */
  rebalance();
  fin = true;
  assert(SETTLED)
}
