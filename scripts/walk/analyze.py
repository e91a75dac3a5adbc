import sys, collections
EXCL = ('internal/memredis/', 'internal/testenv/', 'internal/sagatest/', 'internal/sqlstore/stmtcache.go', 'internal/sqlstore/sqlitemem.go')
HANDOFF_ROOTS = {('internal/admission/check.go', '*Gate.checkBatch'), }
def load(path):
    ev = []
    for line in open(path):
        s, g, k, f, fn = line.split()
        ev.append((int(s), int(g), k, f, fn))
    return ev
def walk(path, verbose=False):
    ev = load(path)
    s0, g0 = next((s, g) for s, g, k, f, fn in ev if fn == '*Service.Place' and k == 'E')
    s1 = next(s for s, g, k, f, fn in ev if fn == '*Service.Place' and k == 'X' and g == g0)
    # handoff goroutines: first event in range is checkBatch (batcher's sender) or the singleflight closure of place
    first = {}
    for s, g, k, f, fn in ev:
        if s0 <= s <= s1 and g != g0 and g not in first:
            first[g] = (f, fn)
    hand = {g for g, (f, fn) in first.items()
            if (f, fn) in HANDOFF_ROOTS or (f == 'internal/placement/workflow.go' and fn.startswith('*placement.place.func'))}
    stacks = collections.defaultdict(list)
    seq = []  # (file, fn) each time the file changes
    cur = None
    depth_ok = {}
    for s, g, k, f, fn in ev:
        if not (s0 <= s <= s1) or (g != g0 and g not in hand) or f.startswith(EXCL):
            continue
        st = stacks[g]
        if k == 'E':
            st.append((f, fn))
            where = (f, fn)
        else:
            st.pop()
            if not st:
                if g == g0:
                    break  # Place returned
                continue   # end of a handed-off segment: the waiting frame resumes, same file
            where = st[-1]
        if cur is None or where[0] != cur:
            seq.append(where)
            cur = where[0]
    return seq, hand
for path in sys.argv[1:]:
    seq, hand = walk(path)
    files = [f for f, _ in seq]
    distinct = len(set(files))
    print(f'== {path}: {len(files)} file entries, {distinct} distinct files, {len(files) - distinct} returns (handoff goroutines {sorted(hand)})')
    for i, (f, fn) in enumerate(seq):
        print(f'{i:3d} {f:45s} {fn}')
