/*
 * reservation.pml: a Promela model of ordersaga's reservation protocol, for spin (docs/design.md, issue 11).
 *
 * One SKU with INIT units; N orders of one line each (qty q[o], 1 by default); one reconciler. Every Lua
 * script and every database transaction is one indivisible step (d_step), as Redis and the order's row lock
 * make them. Everything the code does in several round trips (reconciliation's snapshot, its database read
 * and its compare-and-set script; the cold load on a reserve's path) is several steps here too.
 *
 * Faults: every step may also be left in flight by a timeout and land later or never (the Net process
 * delivers it at any moment, before or after the workflow's own retry, before or after the compensation);
 * the forward steps may time out for good; a workflow may die at any point (terminated: reconciliation then
 * finishes its order); Redis may restart once and lose all its data (cold load from the database); with
 * -DSECOND_LIFE order 0's ID lives a second time once its first workflow is over (Temporal forgot it); with
 * -DFALLBACK a reserve may find Redis unreachable and reserve through the database alone (nothing held,
 * no marker: internal/reconcile/fallback.go reserveInDB); with -DLIMIT both orders belong to one user and the
 * SKU has a per-user limit L (1) below its stock (2): Redis's count of the user (inv:{SKU}:u:{USER}), the
 * database's user_units, and reconciliation's repair of the count (internal/reconcile/userunits.go); with
 * -DRECON_USER the reconciler only repairs the user's count during the run.
 *
 * Broken variants (each must fail; see models/README.md): -DBUG_STOCK_FIRST, -DBUG_NO_MARKER_CHECK,
 * -DBUG_NO_TOMBSTONE, -DBUG_RESTORE_NO_TOMBSTONE, -DBUG_RESTORE_PAID, -DBUG_RELEASE_FIRST, and with
 * -DFALLBACK -DRECON=2: -DBUG_NO_MARK, -DBUG_TOMBSTONE_NO_VER; with -DLIMIT: -DBUG_LIMIT_BEFORE_MARKER,
 * -DBUG_RELEASE_KEEPS_USER.
 */

#ifndef N
#define N 2            /* orders */
#endif
#ifdef LIMIT
#ifndef L
#define L 1            /* -DLIMIT: the SKU's per-user limit; every order belongs to the same user */
#endif
#ifndef INIT
#define INIT 2         /* -DLIMIT: more stock than the limit, so that the limit (not the stock) binds */
#endif
#endif
#ifndef INIT
#define INIT 1         /* units of the SKU loaded into the database and Redis */
#endif
#ifndef RECON
#define RECON 0        /* actions the reconciler may take while orders run (it always makes a final pass) */
#endif
#ifndef ORDERS
#ifdef FALLBACK
#define ORDERS 1       /* orders that run (the others stay untouched): -DFALLBACK's state space */
#else
#define ORDERS N
#endif
#endif
#ifndef RESTARTS
#define RESTARTS 0     /* Redis restarts that lose the data */
#endif

/* Redis markers inv:{SKU}:o:{ORDER}: none, H:<qty>, C:<qty>, R:<qty>, T */
mtype = { NONE, H, C, R, T };
/* orders.status: no row, AWAITING_PAYMENT, PAID, closed (EXPIRED, CANCELLED, REJECTED) */
mtype = { SNONE, AWAIT, PAID, CLOSED };
/* RESTORE ledger row: none, qty 0 (tombstone), qty = the DEDUCT's */
mtype = { RNONE, RTOMB, RQTY };

/* answers */
#define OK          1
#define DUP         2
#define SOLDOUT     3
#define NOTLOADED   4
#define REFUSED     5
#define TIMEOUT     6
#define TOMBSTONE   7
#define KEPT        8
#define DBONLY      9
#define OVER        10   /* reserve.lua {6, held, limit}; Store.Deduct's LimitExceededError */
/* repair_avail.lua codes and modes, repair_hold.lua actions */
#define C_INLINE    1
#define C_ALREADY   2
#define C_LOADED    3
#define C_RACED     4
#define C_REPAIRED  5
#define M_REPAIR    1
#define M_LOAD      2
#define A_DROP      1
#define A_READD     2
#define A_RELEASE   3
#define A_CONFIRM   4
#define U_ADD       1    /* repair_user.lua actions */
#define U_DROP      2

/* ---- Redis (lost by a restart) ---- */
bool  loaded = true;     /* inv:{SKU}:avail exists */
short avail = INIT;      /* inv:{SKU}:avail */
byte  hold[N];           /* inv:{SKU}:holds: order -> units (0 = no field) */
mtype mk[N];             /* inv:{SKU}:o:{ORDER} */
#if RESTARTS > 0
byte  ver;               /* inv:{SKU}:ver (0 = missing) */
#define BUMP ver++
#define SNAPVER(k) s_ver = ver
#define VER_SAME(k) (ver == s_ver)
#define UNSNAP(k) s_ver = 0
#define VER_LOST ver = 0
#else
/* inv:{SKU}:ver without a restart only grows, and only a snapshot's compare-and-set reads it (ver == the
 * snapshot's): what is kept is whether it moved since each pending snapshot (snapshotter k: order k's cold
 * load, or N: the reconciler and the final pass), not the number, which would tell apart states that behave
 * the same (the state space). With -DRESTARTS a restart sets it back to missing: the number is kept. */
byte  snapping;          /* bit k: snapshotter k holds a Redis snapshot (steps 2 to 4 of measure_and_repair) */
byte  vmoved;            /* bit k: the version moved since snapshotter k's snapshot (always within snapping) */
#define BUMP vmoved = snapping
#define SNAPVER(k) snapping = snapping | (1 << (k)); vmoved = vmoved & ~(1 << (k))
#define VER_SAME(k) ((vmoved & (1 << (k))) == 0)
#define UNSNAP(k) snapping = snapping & ~(1 << (k)); vmoved = vmoved & ~(1 << (k))
#define VER_LOST skip     /* (no restart) */
#endif
#ifdef LIMIT
bool  limset = true;     /* inv:{SKU}:limit exists (= L: the database's per_user_limit, never changed here) */
byte  uh[N];             /* inv:{SKU}:u:{USER}: order -> units (0 = no field); the one user of every order */
#endif

/* ---- database ---- */
short stock = INIT;      /* inventory.stock */
bool  ded[N];            /* stock_ledger DEDUCT row */
mtype rst[N];            /* stock_ledger RESTORE row */
/* The rows' auto-increment ids are only compared with a watermark a snapshotter read before (id > wm): what
 * is kept is, per snapshotter k between its watermark and its truth read, which rows were written since
 * (bit i: order i's DEDUCT, bit N+i: its RESTORE with a qty), not the ids (the state space). */
byte  wm_on;             /* bit k: snapshotter k read the watermark (sqlstore.Store.MaxLedgerID), not yet the truth */
byte  newer[4];          /* per snapshotter: the rows written after its watermark */
#define NEWROW(b) newer[0] = newer[0] | (((wm_on >> 0) & 1) * (b)); newer[1] = newer[1] | (((wm_on >> 1) & 1) * (b)); \
                  newer[2] = newer[2] | (((wm_on >> 2) & 1) * (b)); newer[3] = newer[3] | (((wm_on >> 3) & 1) * (b))
mtype st[N];             /* orders.status */
#ifdef LIMIT
byte  uu;                /* user_units.units of (SKU, the user) */
#endif
byte  paid_ev[N];        /* orders.payment_event_id (the life that paid) */

/* ---- the world ---- */
byte q[N];               /* each order's qty */
bool gone[N];            /* the order's workflow is closed or unknown (what the reconciler's probe says) */
bool p_reserve[N], p_deduct[N], p_confirm[N], p_restore[N];   /* an attempt in flight */
byte p_release[N];       /* 0 none, 1 release, 2 release in 'sold' mode */
byte p_paid[N];          /* 0 none, else the event (life) of a MarkPaid in flight */
byte orders_left;        /* workflows not finished */
byte busy;               /* Net, Reconciler, Chaos processes still running */
bool quiet;              /* no workflow left: strays stop (land now or never) */
bool done;               /* the final reconciliation pass ran */

/* ---- ghosts (for the properties only) ---- */
byte n_take[N], n_give[N];   /* times db.stock was taken for / given back to the order */
bool lost;                   /* Redis lost its data at least once */
bool helped;                 /* a workflow died, Redis restarted or the reconciler wrote something */
bool a_death;                /* a workflow died */
bool fellback;               /* a reserve went to the database alone */
bool hold_released;          /* the reconciler ended a hold (repair_hold.lua release: the counter is set later) */
bool late_hold;              /* a Redis reserve of the order that reserved through the database alone landed late */

/* (arithmetic on booleans, not "c -> a : b", so that the macros can stand in LTL formulas) */
#define STANDING(o)   (ded[o] && rst[o] != RQTY)
#define OWES(o)       (hold[o] * (1 - STANDING(o)))
#define NET(o)        ((ded[o] - (rst[o] == RQTY)) * q[o])
#define OPEN_UNITS(o) (((st[o] == AWAIT) + (st[o] == PAID)) * NET(o))
#define PAID_UNITS(o) ((st[o] == PAID) * q[o])
#define ONCE(o)       (n_take[o] <= 1 && n_give[o] <= 1 && n_give[o] <= n_take[o])
#define NOPAIDRST(o)  (st[o] != PAID || rst[o] == RNONE)
#define NOHOLD(o)     (hold[o] == 0)
#define SOLDKEPT(o)   ((st[o] == PAID) == STANDING(o))
#define SELFHOLD(o)   (hold[o] == 0 || STANDING(o))
#if N == 2
#define SUM(F) (F(0) + F(1))
#define ALL(F) (F(0) && F(1))
#elif N == 3
#define SUM(F) (F(0) + F(1) + F(2))
#define ALL(F) (F(0) && F(1) && F(2))
#else
#error "N must be 2 or 3"
#endif

#ifdef LIMIT
#define UH(o)         (uh[o])
#define STAND_UNITS(o) (STANDING(o) * q[o])
#define USER_IN_LINE(o) (uh[o] == STAND_UNITS(o))
#define NOT_RELEASED(o) (uh[o] == 0 || (mk[o] != R && mk[o] != T))
/* U1: the database's count of the user never passes the limit and is always the units of the user's orders
 * whose deduct stands (sqlstore/userunits.go: what LedgerUserUnits computes from the ledger) */
#define UDB_OK    (uu <= L && uu == SUM(STAND_UNITS))
/* U2: Redis's count never lets the user hold more than the limit (reserve.lua checks it in the same script as
 * the hold), in every state and with no exception. It could fail, by design, where Redis does not know a deduct
 * the database counts (after a data loss, or a database-only reservation) and the reconciler adds that deduct
 * back during the run beside a hold the reserve let through, before the database refuses the second deduct (U1
 * is the guard there); no configuration run has that (-DFALLBACK runs one order, -DLIMIT -DRESTARTS=1 has no
 * reconciler during the run), and in those run it holds strictly. */
#define UREDIS_OK (SUM(UH) <= L)
/* U3: a released order is never left in the user's count (release.lua takes it off with the release or the
 * tombstone), unless the reconciler ended its hold (repair_hold.lua 'release' leaves the count to fixUserUnits) */
#define UREL_OK   (hold_released || ALL(NOT_RELEASED))
#define USER_OK   (UDB_OK && UREDIS_OK && UREL_OK)
#else
#define USER_OK   true
#endif

/* I1/I2: the database never below 0, never more sold than loaded, the ledger accounts for every unit */
#define DB_OK   (stock >= 0 && stock <= INIT && INIT - stock == SUM(NET) && SUM(OPEN_UNITS) <= INIT)
/* I3: Redis never promises more than the database holds once holds are counted (not across a data loss:
 * the cold load cannot see holds that were lost, internal/reconcile/fallback.go coldLoad) */
#define I3_OK   (lost || fellback || !loaded || avail + SUM(OWES) <= stock)
/* I4: each order takes db.stock at most once and gives it back at most once (and only what it took) */
#define ONCE_OK ALL(ONCE)
/* a PAID order is never restored, and an order is never paid once restored */
#define PAID_OK ALL(NOPAIDRST)
#define SAFE    (DB_OK && I3_OK && ONCE_OK && PAID_OK && USER_OK)
/* quiet, after the final reconciliation: every unit sold (PAID) or back on both sides, no hold left */
#ifdef LIMIT
/* U4: and the user's count in Redis is exactly the orders whose deduct stands (the paid ones), as the database's */
#define SETTLED (loaded && avail == stock && ALL(NOHOLD) && ALL(SOLDKEPT) && stock + SUM(PAID_UNITS) == INIT && \
                 limset && ALL(USER_IN_LINE) && uu == SUM(PAID_UNITS))
#else
#define SETTLED (loaded && avail == stock && ALL(NOHOLD) && ALL(SOLDKEPT) && stock + SUM(PAID_UNITS) == INIT)
#endif
/* quiet, nobody helped (no death, no restart, no reconciler write): the protocol alone is back in line */
#ifdef LIMIT
#define SELF_OK (loaded && avail == stock && ALL(SELFHOLD) && ALL(SOLDKEPT) && ALL(USER_IN_LINE))
#else
#define SELF_OK (loaded && avail == stock && ALL(SELFHOLD) && ALL(SOLDKEPT))
#endif
/* quiet, no workflow died: Redis never promises less than the database holds, once the units of holds that
 * no deduct took are counted (an order's release gives back exactly what the counter counted for it: an open
 * order's standing deduct is counted iff it has a marker). Not after a hold the reconciler ended (its units come
 * back with the next fixAvail), nor after a data loss (a late reserve and confirm of a closed order whose
 * tombstone was lost take units that only reconciliation gives back), nor after the late Redis reserve of an
 * order that reserved through the database alone (-DFALLBACK with INIT >= 2: the attempt that timed out lands
 * after a re-sync counted the order's deduct, and holds a unit Redis had left; fixHolds confirms the hold and
 * fixAvail gives the unit back: found with -DLIMIT's INIT 2, see models/README.md). */
#define UNDER_OK (a_death || hold_released || lost || late_hold || !loaded || avail + SUM(OWES) >= stock)

/* =========================== Redis scripts (internal/redisstock/lua) =========================== */

#ifdef LIMIT
/* reserve.lua: the user's units (HVALS of inv:{SKU}:u:{USER}) plus this order's would pass the limit */
#define OVERLIM(o) (limset && SUM(UH) + q[o] > L)
#else
#define OVERLIM(o) false
#endif

/* internal/redisstock/lua/reserve.lua (redisstock.Store.Reserve, internal/redisstock/store.go); with -DLIMIT
 * also its per-user count (KEYS[5] the limit, KEYS[6] the user's count) */
inline reserve_lua(o, res) {
#if defined(BUG_STOCK_FIRST) || defined(BUG_LIMIT_BEFORE_MARKER)
  if
#ifdef BUG_STOCK_FIRST
  /* broken: the stock is checked before the marker */
  :: loaded && avail < q[o] -> res = SOLDOUT
#else
  /* broken: the user's count is checked before the marker (a retry counts its own first attempt) */
  :: loaded && OVERLIM(o) -> res = OVER
#endif
  :: else -> skip
  fi;
  if
  :: res == SOLDOUT || res == OVER -> skip
  ::
#else
  if
  :: true ->
#endif
#ifndef BUG_NO_MARKER_CHECK
  if
  :: mk[o] == H || mk[o] == C -> res = DUP
  :: mk[o] == R || mk[o] == T -> res = REFUSED
  :: else ->
#else
  if
  :: true ->
#endif
     if
     :: !loaded -> res = NOTLOADED
#ifdef LIMIT
     :: loaded && OVERLIM(o) -> res = OVER                 /* {6, held, limit}: after the marker, before the stock */
     :: loaded && !OVERLIM(o) && avail < q[o] -> res = SOLDOUT
     :: else -> avail = avail - q[o]; hold[o] = q[o]; mk[o] = H;
                if :: limset -> uh[o] = q[o] :: else -> skip fi;   /* HSET KEYS[6] (counted) */
                BUMP; res = OK
#else
     :: loaded && avail < q[o] -> res = SOLDOUT
     :: else -> avail = avail - q[o]; hold[o] = q[o]; mk[o] = H; BUMP; res = OK
#endif
     fi
  fi
  fi;
  /* design.md, duplicate: answers as the first did (a reserve that landed is never told "sold out", nor
   * that the user is over the limit) */
  assert(res != SOLDOUT || (mk[o] != H && mk[o] != C));
  assert(res != OVER || (mk[o] != H && mk[o] != C))
}

/* internal/redisstock/lua/confirm.lua (redisstock.Store.Confirm via Activities.ConfirmLines) */
inline confirm_lua(o) {
  if
  :: mk[o] == H -> hold[o] = 0; mk[o] = C; BUMP
  :: else -> skip    /* 2 duplicate, 5 refused, 6 no hold */
  fi
}

/* release.lua takes the order off the user's count (HDEL KEYS[6]) with a release or a tombstone; 'sold' keeps it */
#ifdef LIMIT
#define UNCOUNT(o) uh[o] = 0
#ifdef BUG_RELEASE_KEEPS_USER
#define UNCOUNT_GIVEN(o) skip                              /* broken: the units go back, the user's count keeps them */
#else
#define UNCOUNT_GIVEN(o) uh[o] = 0
#endif
#else
#define UNCOUNT(o) skip
#define UNCOUNT_GIVEN(o) skip
#endif

/* internal/redisstock/lua/release.lua (redisstock.Store.Release / ReleaseUnsold via Activities.ReleaseLine); sold = 'sold' mode */
inline release_lua(o, sold, res) {
  if
#ifdef BUG_NO_TOMBSTONE
  :: mk[o] == NONE -> res = TOMBSTONE                /* broken: no tombstone written */
#elif defined(BUG_TOMBSTONE_NO_VER)
  :: mk[o] == NONE -> mk[o] = T; res = TOMBSTONE        /* broken: a repair from an older snapshot passes */
#else
  :: mk[o] == NONE -> mk[o] = T; UNCOUNT(o); BUMP; res = TOMBSTONE   /* SET T EX ttl, HDEL KEYS[6], INCR ver */
#endif
  :: mk[o] == R || mk[o] == T -> res = DUP
  :: mk[o] == C && sold -> res = KEPT
#ifndef BUG_SOLD_GIVES_HOLD
  :: mk[o] == H && sold -> hold[o] = 0; mk[o] = C; BUMP; res = KEPT   /* the lost confirm, done here */
#endif
  :: else ->
     if
     :: loaded -> avail = avail + q[o]
     :: else -> skip                                 /* the SKU is reloaded from the database instead */
     fi;
     hold[o] = 0; mk[o] = R; UNCOUNT_GIVEN(o); BUMP; res = OK   /* HDEL holds, HDEL KEYS[6], SET R */
  fi
}

/* internal/redisstock/lua/repair_hold.lua (redisstock.Store.RepairHold, internal/redisstock/repair.go) */
inline repair_hold_lua(o, action, mseen, hseen, rdone) {
  if
  :: mk[o] != mseen || hold[o] != hseen -> rdone = false
  :: else ->
     if
     :: action == A_DROP ->
        if
        :: hold[o] == 0 || mk[o] == H -> rdone = false
        :: else -> hold[o] = 0; BUMP; rdone = true
        fi
     :: action != A_DROP && mk[o] != H -> rdone = false
     :: action == A_READD && mk[o] == H ->
        if
        :: hold[o] != 0 -> rdone = false
        :: else -> hold[o] = q[o]; BUMP; rdone = true
        fi
     :: action == A_RELEASE && mk[o] == H -> hold[o] = 0; mk[o] = R; BUMP; rdone = true; hold_released = true
     :: action == A_CONFIRM && mk[o] == H -> hold[o] = 0; mk[o] = C; BUMP; rdone = true
     fi
  fi;
  if :: rdone -> helped = true :: else -> skip fi
}

#ifdef LIMIT
/* internal/redisstock/lua/repair_user.lua (internal/redisstock/users.go Store.RepairUser): add or drop the
 * order's entry in the user's count, only if the marker and the entry are still as reconciliation saw them */
inline repair_user_lua(o, action, mseen, eseen, rdone) {
  if
  :: mk[o] != mseen || uh[o] != eseen -> rdone = false     /* 4 raced */
  :: else ->
     if
     :: action == U_ADD ->
        if
        :: uh[o] != 0 || mk[o] == R || mk[o] == T -> rdone = false
        :: else -> uh[o] = q[o]; BUMP; rdone = true        /* HSET KEYS[6] order units, INCR ver */
        fi
     :: action == U_DROP ->
        if
        :: uh[o] == 0 || mk[o] == H -> rdone = false
        :: else -> uh[o] = 0; BUMP; rdone = true           /* HDEL KEYS[6] order, INCR ver */
        fi
     fi
  fi;
  if :: rdone -> helped = true :: else -> skip fi
}
#endif

/* internal/redisstock/lua/repair_avail.lua, modes 'repair' and 'load' ('set' is the admin stock change: not modelled) */
inline repair_avail_lua(k, mode, code) {
  owed = 0;
  for (i : 0 .. N-1) {
    if :: hold[i] > 0 && !(t_ded & (1 << i)) -> owed = owed + hold[i] :: else -> skip fi;
    if :: (t_pend & (1 << i)) && mk[i] == C -> owed = owed + q[i] :: else -> skip fi
  }
  target = t_stock - owed;
  if
  :: !loaded && !VER_SAME(k) -> code = C_RACED
  :: !loaded && VER_SAME(k) -> loaded = true; avail = target; BUMP; code = C_LOADED
  :: loaded && mode == M_LOAD -> code = C_ALREADY
  :: loaded && mode != M_LOAD && avail == target -> code = C_INLINE
  :: loaded && mode != M_LOAD && avail != target && (!s_loaded || s_avail != avail || !VER_SAME(k)) -> code = C_RACED
  :: loaded && mode != M_LOAD && avail != target && s_loaded && s_avail == avail && VER_SAME(k) ->
     avail = target; BUMP; code = C_REPAIRED
  fi;
#ifndef BUG_NO_MARK
  /* mark(): every open order whose standing deduct the target counted gets 'C' if it has no marker */
  if
  :: code == C_LOADED || code == C_REPAIRED || (code == C_INLINE && VER_SAME(k)) ->
     for (i : 0 .. N-1) { if :: (t_open & (1 << i)) && mk[i] == NONE -> mk[i] = C :: else -> skip fi }
  :: else -> skip
  fi;
#endif
  if :: code == C_LOADED || code == C_REPAIRED -> helped = true :: else -> skip fi;
  assert(!loaded || avail >= 0)
}

/* ========================= database transactions (internal/sqlstore/*.go) ========================= */

/* internal/sqlstore/ledger.go Store.Deduct: deductTx, and deductAgain when the DEDUCT row exists */
inline deduct_tx(o, res) {
  if
  :: ded[o] ->                                        /* duplicate key: deductAgain under the order's lock */
     if
     :: st[o] == AWAIT && rst[o] == RNONE -> res = DUP   /* AlreadyDone */
     :: else -> res = REFUSED                            /* Compensated */
     fi
#ifndef BUG_DEDUCT_IGNORES_RESTORE
  :: !ded[o] && rst[o] != RNONE -> res = REFUSED         /* a RESTORE exists: the hanging deduct is refused */
#endif
  :: else ->
     if
     :: st[o] != SNONE -> res = REFUSED                  /* the order was recorded (closed) before: refused */
     :: st[o] == SNONE && stock < q[o] -> res = SOLDOUT  /* 0 rows updated: the transaction rolls back */
#ifdef LIMIT
     /* internal/sqlstore/ledger.go deductTx -> userunits.go addUserUnits, under the SKU's row lock after the
      * conditional UPDATE: past the limit, LimitExceededError and the whole transaction rolls back */
     :: st[o] == SNONE && stock >= q[o] && uu + q[o] > L -> res = OVER
     :: else ->
        NEWROW(1 << o); ded[o] = true; st[o] = AWAIT;
        stock = stock - q[o]; uu = uu + q[o]; n_take[o]++; res = OK
#else
     :: else ->
        NEWROW(1 << o); ded[o] = true; st[o] = AWAIT;
        stock = stock - q[o]; n_take[o]++; res = OK
#endif
     fi
  fi
}

/* internal/sqlstore/ledger.go Store.Restore / restoreTx: a PAID order gives nothing back (Sold) */
inline restore_tx(o, sold) {
  sold = false;
  if
#ifndef BUG_RESTORE_PAID
  :: st[o] == PAID -> sold = true
#endif
  :: rst[o] != RNONE -> skip                              /* duplicate */
  :: else ->
     if
#ifdef LIMIT
     /* internal/sqlstore/ledger.go restoreTx -> userunits.go releaseUserUnits (units - qty, never below 0) */
     :: ded[o] -> NEWROW(1 << (N + o)); rst[o] = RQTY; stock = stock + q[o]; n_give[o]++;
        if :: uu > q[o] -> uu = uu - q[o] :: else -> uu = 0 fi
#else
     :: ded[o] -> NEWROW(1 << (N + o)); rst[o] = RQTY; stock = stock + q[o]; n_give[o]++
#endif
#ifdef BUG_RESTORE_NO_TOMBSTONE
     :: else -> skip                                      /* broken: nothing deducted, no row written */
#else
     :: else -> rst[o] = RTOMB                            /* the tombstone that refuses a late deduct (its id is
                                                             never compared: only rows with a qty count) */
#endif
     fi
  fi
}

/* internal/sqlstore/orders.go Store.MarkPaid (event ev) */
inline mark_paid_tx(o, ev, res) {
  if
  :: st[o] == PAID && paid_ev[o] == ev -> res = OK        /* the same event again: no-op */
  :: st[o] == PAID && paid_ev[o] != ev -> res = REFUSED
  :: st[o] == SNONE || st[o] == CLOSED -> res = REFUSED
  :: st[o] == AWAIT && rst[o] != RNONE -> res = REFUSED   /* its stock was restored */
  :: st[o] == AWAIT && rst[o] == RNONE -> st[o] = PAID; paid_ev[o] = ev; res = OK
  fi
}

/* internal/sqlstore/orders.go Store.CloseOrder / closeTx (the workflow's record): an open order is closed and a
   deduct of it that still stands is given back in the same transaction (a duplicate after a compensation) */
inline close_order_tx(o) {
  if
  :: st[o] == SNONE -> st[o] = CLOSED                     /* recorded with its lines */
  :: st[o] == AWAIT -> st[o] = CLOSED; restore_tx(o, sold)
  :: else -> skip                                         /* final: never changed (PAID stays PAID) */
  fi
}

/* internal/sqlstore/orders.go Store.CloseUnpaid: closeTx on an order that has a row; the restore runs only when
   this call closed the order */
inline close_unpaid_tx(o, restored) {
  restored = false;
  if
  :: st[o] == AWAIT -> st[o] = CLOSED; restore_tx(o, sold); restored = true  /* every line answered */
  :: else -> skip                                         /* ErrNotFound / PAID / already final */
  fi
}

/* ============================ the order's workflow ============================ */

/* a step whose attempt may time out while in flight: it lands later (Net) or never */
#define STRAY(flag) if :: flag[o] = true :: skip fi

/* internal/reconcile/engine.go measureAndRepair (mode repair: Reconciler.fixAvail; mode load: coldLoad/loadAvail) */
inline measure_and_repair(k, mode, code) {
  d_step { wm_on = wm_on | (1 << (k)); newer[k] = 0 };    /* 1. sqlstore.Store.MaxLedgerID */
  d_step {                                                /* 2. redisstock.Store.Snapshot (one MULTI) */
    s_loaded = loaded; s_avail = avail; SNAPVER(k); s_holds = 0;
    for (i : 0 .. N-1) { if :: hold[i] > 0 -> s_holds = s_holds | (1 << i) :: else -> skip fi }
  }
  d_step {                                                /* 3. sqlstore.Store.ReadSKUTruth */
    t_stock = stock; t_ded = 0; t_pend = 0; t_open = 0;
    for (i : 0 .. N-1) {
      net = 0;
      if :: ded[i] && ((s_holds & (1 << i)) || (newer[k] & (1 << i))) -> net = net + q[i] :: else -> skip fi;
      if :: rst[i] == RQTY && ((s_holds & (1 << i)) || (newer[k] & (1 << (N + i)))) -> net = net - q[i] :: else -> skip fi;
      if :: net > 0 -> t_ded = t_ded | (1 << i) :: else -> skip fi;
      if :: rst[i] == RQTY && ((newer[k] & (1 << (N + i))) || st[i] == AWAIT) -> t_pend = t_pend | (1 << i) :: else -> skip fi;
      if :: st[i] == AWAIT && ded[i] && rst[i] == RNONE -> t_open = t_open | (1 << i) :: else -> skip fi
    };
    wm_on = wm_on & ~(1 << (k)); newer[k] = 0; net = 0; i = 0   /* the watermark is not read again */
  }
#ifdef LIMIT
  limset = true;                                          /* 3b. Store.Limit / SetLimit from the truth's limit */
#endif
  d_step { repair_avail_lua(k, mode, code);               /* 4. repair_avail.lua, compare-and-set */
           UNSNAP(k); s_loaded = 0; s_avail = 0; s_holds = 0; t_stock = 0; t_ded = 0; t_pend = 0; t_open = 0;
           owed = 0; target = 0; code = 0; i = 0 }        /* (the snapshot and the truth are dead now) */
}

#define MR_LOCALS byte s_ver, s_holds, t_ded, t_pend, t_open, code, i; bool s_loaded; short s_avail, t_stock, owed, target, net

#ifdef GONE
#define DIE if :: goto died :: skip fi
#else
#define DIE skip
#endif

/* workflows/order.go OrderWorkflow (run, reserve, deduct, confirm, awaitPayment, compensate, record) */
proctype Order(byte o; byte life) {
  byte res; bool sold, rsv_started, ded_started;
  MR_LOCALS;

  /* reserve: Activities.ReserveLine (activities/activities.go; internal/reconcile/fallback.go Reserver), a local activity with a deadline */
  rsv_started = true;
  STRAY(p_reserve);
  if
  :: d_step { reserve_lua(o, res) };
     if
     :: res == NOTLOADED ->                               /* ReserveLine: coldLoad, then reserve again */
        if
        :: loaded -> skip                                 /* coldLoad: redisstock.Store.Available says loaded */
        :: else -> measure_and_repair(o, M_LOAD, code)    /* loadAvail */
        fi;
        d_step { reserve_lua(o, res) }
     :: else -> skip
     fi
  :: res = TIMEOUT                                        /* every attempt timed out */
#ifdef FALLBACK
  :: o == 0 -> d_step { fellback = true; res = DBONLY }   /* Redis unreachable: reserveInDB holds nothing */
#endif
  fi;
  if
  :: res == OK || res == DUP || res == DBONLY -> res = 0
  :: else -> res = 0; goto compensate                     /* reject */
  fi;
  DIE;

  /* deduct: Activities.DeductOrder -> Store.Deduct, a local activity with a deadline */
  ded_started = true;
  STRAY(p_deduct);
  if
  :: d_step { deduct_tx(o, res) }
  :: res = TIMEOUT
  fi;
  if
  :: res == OK || res == DUP -> res = 0
  :: else -> res = 0; goto compensate                     /* reject */
  fi;
  DIE;

  /* confirm: Activities.ConfirmLines; failing is harmless (reconciliation drops the hold) */
  if
  :: d_step { confirm_lua(o) }
  :: p_confirm[o] = true                                  /* timed out, lands later or never */
  fi;

  /* awaitPayment: a payment, or the deadline / a cancel, or the workflow is terminated */
  if
  :: if :: p_paid[o] = life :: skip fi;                  /* MarkPaid retries until it answers */
     d_step { mark_paid_tx(o, life, res) };
     if
     :: res == OK -> res = 0; goto finished
     :: else -> res = 0                                   /* refused: refunded, keep waiting: the deadline */
     fi
  :: skip                                                 /* the deadline (or a cancel) */
#ifdef GONE
  :: goto died
#endif
  fi;

compensate:
  /* compensate: restore the database first (RestoreOrder, retried until it answers) */
#ifndef BUG_RELEASE_FIRST
  if
  :: ded_started ->
     STRAY(p_restore);
     d_step { restore_tx(o, sold) }
  :: else -> sold = false
  fi;
  DIE;
#endif
  /* then release Redis (ReleaseLine, 'sold' mode when the database kept the units sold: the restore said so,
   * or ReleaseLine reads the order PAID, e.g. a later life of a paid order's ID that did not restore) */
  if
  :: rsv_started ->
#ifndef BUG_RELEASE_TRUSTS_WORKFLOW
     sold = sold || (st[o] == PAID);                     /* Store.Order, before the script */
#endif
     if :: sold -> p_release[o] = 2 :: !sold -> p_release[o] = 1 :: skip fi;
     d_step { release_lua(o, sold, res); res = 0; sold = false }
  :: else -> skip
  fi;
#ifdef BUG_RELEASE_FIRST
  if
  :: ded_started ->
     STRAY(p_restore);
     d_step { restore_tx(o, sold) }
  :: else -> skip
  fi;
#endif
  /* record: CloseOrder (the database's status wins) */
  d_step { close_order_tx(o) };
  goto finished;

died:
  helped = true; a_death = true;
finished:
  skip;
#ifdef SECOND_LIFE
  if
  /* the order ID lives again (Temporal forgot it): days later, so reconciliation has closed the first life
   * by then if it was left open (-DSECOND_LIFE_EARLY drops that assumption: see models/README.md) */
#ifdef SECOND_LIFE_EARLY
  :: o == 0 && life == 1 -> atomic { run Order(o, 2) }
#else
  :: o == 0 && life == 1 && st[o] != AWAIT -> atomic { run Order(o, 2) }
#endif
  :: else -> atomic { gone[o] = true; orders_left-- }
  fi
#else
  atomic { gone[o] = true; orders_left-- }
#endif
}

/* attempts left in flight by a timeout: each lands at any later moment, or never */
proctype Net(byte o) {
  byte res; bool sold;
  do
  :: d_step { p_reserve[o] -> p_reserve[o] = false; reserve_lua(o, res);
              if :: o == 0 && fellback && res == OK && STANDING(o) -> late_hold = true :: else -> skip fi; res = 0 }
  :: d_step { p_deduct[o] -> p_deduct[o] = false; deduct_tx(o, res); res = 0 }
  :: d_step { p_confirm[o] -> p_confirm[o] = false; confirm_lua(o) }
  :: d_step { p_restore[o] -> p_restore[o] = false; restore_tx(o, sold); sold = false }
#ifndef BUG_RELEASE_TRUSTS_WORKFLOW
  :: d_step { p_release[o] > 0 -> sold = (p_release[o] == 2) || (st[o] == PAID); p_release[o] = 0; release_lua(o, sold, res); res = 0; sold = false }
#else
  :: d_step { p_release[o] > 0 -> sold = (p_release[o] == 2); p_release[o] = 0; release_lua(o, sold, res); res = 0; sold = false }
#endif
  :: d_step { p_paid[o] > 0 -> mark_paid_tx(o, p_paid[o], res); p_paid[o] = 0; res = 0 }
  :: quiet -> break
  od;
  busy--
}

/* ============================== reconciliation ============================== */

#ifdef LIMIT
#define FH_LOCALS mtype m_seen, f_st; byte h_seen, action, e_seen; bool live, rdone, f_ded, f_rst, restored, rsold, f_stand; byte rres
#else
#define FH_LOCALS mtype m_seen, f_st; byte h_seen, action; bool live, rdone, f_ded, f_rst, restored, rsold; byte rres
#endif

/* internal/reconcile/engine.go Reconciler.fixHolds, for one order's hold and marker of the SKU (every hold is
 * taken as older than the grace period) */
inline fix_hold(o) {
  d_step { m_seen = mk[o]; h_seen = hold[o] };            /* redisstock.Store.Markers (SCAN + GET) and HGETALL */
  live = false;
  if
  :: h_seen > 0 && m_seen != H -> d_step { repair_hold_lua(o, A_DROP, m_seen, h_seen, rdone) }   /* stray hold */
  :: h_seen == 0 && m_seen == H -> d_step { repair_hold_lua(o, A_READD, m_seen, 0, rdone); live = rdone }
  :: h_seen > 0 && m_seen == H -> live = true
  :: else -> skip
  fi;
  if
  :: live ->
     d_step { f_st = st[o]; f_ded = ded[o]; f_rst = (rst[o] != RNONE) };   /* sqlstore.Store.OrderFacts */
     if
     :: f_ded && !f_rst -> action = A_CONFIRM                              /* standing deduct */
     :: !(f_ded && !f_rst) && (f_st == PAID || f_st == CLOSED) -> action = A_RELEASE
     :: !(f_ded && !f_rst) && f_st == SNONE && gone[o] -> action = A_RELEASE  /* OrderProbe: gone */
     :: else -> action = 0                                                 /* left alone */
     fi;
     if
     :: action != 0 -> d_step { repair_hold_lua(o, action, H, q[o], rdone) }
     :: else -> skip
     fi
  :: else -> skip
  fi;
  d_step { m_seen = 0; h_seen = 0; live = false; rdone = false; f_st = 0; f_ded = false; f_rst = false; action = 0 }
}

#ifdef LIMIT
/* internal/reconcile/userunits.go Reconciler.fixUserUnits, for one order of the user: Redis first
 * (redisstock/users.go UserEntries: HGETALL of the user's count, then GET of each counted order's marker),
 * the database after (sqlstore/userunits.go StandingUserOrders), then repairUser -> repair_user.lua */
inline fix_user(o) {
  e_seen = uh[o];                                         /* HGETALL inv:{SKU}:u:{USER} */
  if
  :: e_seen > 0 -> m_seen = mk[o]                         /* GET the counted order's marker */
  :: else -> skip
  fi;
  f_stand = STANDING(o);                                  /* StandingUserOrders */
  if
  :: e_seen > 0 && !f_stand && m_seen != H ->             /* counted, the database does not: drop */
     d_step { repair_user_lua(o, U_DROP, m_seen, e_seen, rdone) }
  :: e_seen == 0 && f_stand ->                            /* the database counts it, Redis does not: add */
     m_seen = mk[o];                                      /* Redis.Marker */
     d_step { repair_user_lua(o, U_ADD, m_seen, 0, rdone) }
  :: else -> skip                                         /* in line, or held now ('H': its deduct is to come) */
  fi;
  d_step { e_seen = 0; m_seen = 0; f_stand = false; rdone = false }
}
#endif

/* internal/reconcile/leaks.go Reconciler.Leaks -> closeLeaked -> CloseGone:
 * an open order whose workflow is gone: CloseUnpaid (close + restore, one transaction), then the Redis
 * release of every line it answered; the release may fail, and the next run does not see the order again */
inline leak(o) {
  if
  :: st[o] == AWAIT && gone[o] ->                         /* openOrdersBefore, OrderProbe */
     d_step { close_unpaid_tx(o, restored); helped = true };
     if
     :: restored -> 
        if
        :: d_step { release_lua(o, false, rres) }
        :: skip                                           /* the release failed: CloseGone returns the error */
        fi
     :: else -> skip
     fi
  :: else -> skip
  fi;
  d_step { restored = false; rres = 0; sold = false }
}

proctype Reconciler() {
  byte budget = RECON, o;
  bool sold;
  MR_LOCALS;
  FH_LOCALS;
  do
  :: atomic { budget > 0 && !quiet -> budget--; select(o : 0 .. N-1) }   /* (one step: the choice is local) */
     if
#ifndef RECON_USER
     :: measure_and_repair(N, M_REPAIR, code)             /* fixAvail (one compare-and-set attempt) */
#endif
#if !defined(FALLBACK) && !defined(RECON_USER)
     /* (with -DFALLBACK the reconciler only re-syncs the counter during the run: the state space) */
     :: fix_hold(o)                                       /* fixHolds */
     :: leak(o)                                           /* Leaks */
#endif
#ifdef LIMIT
     /* (with -DRECON_USER the reconciler only squares the user's count during the run: the state space) */
     :: fix_user(o)                                       /* fixUserUnits */
#endif
     fi;
     o = 0
  :: quiet || budget == 0 -> break
  od;
  busy--
}

/* a Redis restart without its data (no AOF, or a failover to an empty replica) */
proctype Chaos() {
  byte n = RESTARTS, i;
  do
  :: n > 0 && !quiet ->
     n--;
     d_step {
       loaded = false; avail = 0; VER_LOST;
       for (i : 0 .. N-1) { hold[i] = 0; mk[i] = NONE }
#ifdef LIMIT
       for (i : 0 .. N-1) { uh[i] = 0 }
       limset = false;
#endif
       i = 0; lost = true; helped = true
     }
  :: quiet -> break
  od;
  busy--
}

/* the invariants, checked in every state */
active proctype Monitor() {
end: atomic { !SAFE -> assert(DB_OK); assert(I3_OK); assert(ONCE_OK); assert(PAID_OK);
#ifdef LIMIT
               assert(UDB_OK); assert(UREDIS_OK); assert(UREL_OK)
#else
               skip
#endif
     }
}

init {
  byte o;
  bool sold;
  MR_LOCALS;
  FH_LOCALS;
  atomic {
    for (o : 0 .. N-1) { q[o] = 1; mk[o] = NONE; st[o] = SNONE; rst[o] = RNONE }
    orders_left = ORDERS; busy = ORDERS + 2;
    for (o : 0 .. ORDERS-1) { run Order(o, 1); run Net(o) }
    run Reconciler(); run Chaos();
    o = 0
  }
  (orders_left == 0);
  quiet = true;
  (busy == 0);
  /* every workflow has ended and no step is in flight any more: when nobody helped, the protocol alone is
   * back in line (design.md I3 when quiet; a hold of a deducted order whose confirm was lost may remain) */
  assert(helped || fellback || SELF_OK);     /* a database-only reservation needs the re-sync */
  assert(UNDER_OK);
  /* the final reconciliation: Leaks, then per SKU fixHolds and fixAvail */
  for (o : 0 .. N-1) { leak(o) }
  for (o : 0 .. N-1) { fix_hold(o) }
  measure_and_repair(N, M_REPAIR, code);
#ifdef LIMIT
  for (o : 0 .. N-1) { fix_user(o) }                      /* then fixUserUnits */
#endif
  done = true;
  /* every unit is either sold (PAID) or back on both sides */
  assert(SETTLED)
}

ltl safe    { [] SAFE }
ltl settles { <> done }
ltl settled { [] (done -> SETTLED) }
