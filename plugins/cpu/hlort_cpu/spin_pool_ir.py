"""The native pool's LLVM IR: worker loop, dispatcher and stop, as XLA's CPU runtime (Eigen's
pool) runs them: workers spin briefly on a generation counter, then sleep on a futex.

Waking a sleeping thread costs ~100 us on a small VM (measured: a pthread cond-var wake), a
spinning handoff ~0.1 us, while many of a program's kernels are 10-200 us of work. So a worker
that finished spins (``pause``, clock checked every 64 turns) for up to ``spin_ns`` before it
sleeps, and the next kernel of the program finds it awake. The budget adapts (see the worker):
a spin that finds its thread preempted (more runnable threads than cores) drops to zero, and
each dispatch the worker takes part in adds GROW_NS back; the caller waits for running chunks
spinning at most as long as its own chunks took.

A dispatch writes its descriptor (fn, table, tables, ranges), sets the claim word to
(generation, n, next = 1), bumps the generation (seq_cst) and wakes sleepers only when some
sleep. Chunks are claimed by compare-and-swap on that word, so nobody waits for a chunk nobody
has started: the caller runs chunk 0, then claims whatever chunks no worker has taken yet (a
sleeping or descheduled worker costs no wait; on a loaded machine the caller may run them all),
and only then waits for the chunks workers are running (spin, then futex on the remaining
count, which the last finisher wakes). A worker that wakes late finds the word's generation
moved on and claims nothing; a claimed chunk keeps its dispatch (and descriptor) alive until it
is done. A dispatch that finds the pool busy (another device's thread) runs its chunks inline:
nothing waits on anything but running chunks, so nothing deadlocks.

The state is one zeroed block (byte offsets below), one cache line per contended word. The
claim word packs generation (32 bits), n and next (16 bits each): at most MAX_CHUNKS chunks.
Linux only: futex through libc's ``syscall``, ``clock_gettime(CLOCK_MONOTONIC)``.
"""

from __future__ import annotations

import platform

GEN, SLEEPERS, REMAINING, WAITING, BUSY, STOP, SPIN_NS = 0, 64, 128, 132, 192, 196, 200
CLAIM, FN, TABLE, TABLES, RANGES = 256, 320, 328, 336, 344
STATE_BYTES = 384
MAX_CHUNKS = (1 << 16) - 1
PREEMPT_NS = 50_000  # a spin turn this long means the thread lost its core
GROW_NS = 20_000  # a worker's spin budget grows by this per dispatch it took part in
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129
_ARCH = {  # machine: (SYS_futex, spin-wait hint)
    "x86_64": (202, "x86.sse2.pause()"),
    "amd64": (202, "x86.sse2.pause()"),
    "aarch64": (98, "aarch64.hint(i32 1)"),  # yield
    "arm64": (98, "aarch64.hint(i32 1)"),
}


def supported() -> str | None:
    """None where the pool can run, else why not (for the fallback's warning)."""
    if platform.system() != "Linux":
        return f"the native pool needs Linux futexes (this is {platform.system()})"
    if platform.machine().lower() not in _ARCH:
        return f"no futex syscall number known for {platform.machine()}"
    return None


def pool_ir(prefix: str) -> str:
    """The module: ``{prefix}_worker(state)``, ``{prefix}_run(state, fn, table, tables, ranges,
    n)`` and ``{prefix}_try_stop(state) -> i32``."""
    futex, hint = _ARCH[platform.machine().lower()]
    name, args = hint.split("(")
    declare = f"declare void @llvm.{name}({'i32' if args != ')' else ''})"
    text = _TEMPLATE.replace("@P_", f"@{prefix}_").replace("FUTEX", str(futex))
    text = text.replace("DECLARE_HINT", declare).replace("HINT", f"call void @llvm.{hint}")
    return text % {
        "sleepers": SLEEPERS,
        "remaining": REMAINING,
        "waiting": WAITING,
        "busy": BUSY,
        "stop": STOP,
        "spin": SPIN_NS,
        "claim": CLAIM,
        "fn": FN,
        "table": TABLE,
        "tables": TABLES,
        "ranges": RANGES,
        "preempt": PREEMPT_NS,
        "grow": GROW_NS,
        "wait": FUTEX_WAIT_PRIVATE,
        "wake": FUTEX_WAKE_PRIVATE,
    }


_TEMPLATE = r"""
; one-line defines: the JIT adds attributes to each define line
declare i64 @syscall(i64, ...)
DECLARE_HINT
declare i32 @clock_gettime(i32, ptr)

define internal i64 @P_now() {
  %%ts = alloca [2 x i64], align 8
  %%r = call i32 @clock_gettime(i32 1, ptr %%ts)
  %%s = load i64, ptr %%ts, align 8
  %%np = getelementptr inbounds i64, ptr %%ts, i64 1
  %%n = load i64, ptr %%np, align 8
  %%m = mul i64 %%s, 1000000000
  %%t = add i64 %%m, %%n
  ret i64 %%t
}

define internal void @P_futex_wait(ptr %%word, i32 %%value) {
  %%v = zext i32 %%value to i64
  %%r = call i64 (i64, ...) @syscall(i64 FUTEX, ptr %%word, i64 %(wait)d, i64 %%v, ptr null)
  ret void
}

define internal void @P_futex_wake(ptr %%word, i64 %%count) {
  %%r = call i64 (i64, ...) @syscall(i64 FUTEX, ptr %%word, i64 %(wake)d, i64 %%count)
  ret void
}

; every 64th turn of a spin: 1 once %%limit ns have passed since %%t0, or when the thread
; lost its core since %%prev (a gap over preempt_ns: the machine has more threads than cores)
define internal i1 @P_waited(i64 %%t, i64 %%t0, i64 %%prev, i64 %%limit) {
entry:
  %%gap = sub i64 %%t, %%prev
  %%preempted = icmp sgt i64 %%gap, %(preempt)d
  %%el = sub i64 %%t, %%t0
  %%over = icmp sgt i64 %%el, %%limit
  %%stop = or i1 %%preempted, %%over
  ret i1 %%stop
}

; wait for the generation to differ from %%seen: spin for *%%budget ns, then sleep on it.
; A spin that finds itself preempted zeroes the budget and sleeps at once. *%%spun says
; whether the change was seen spinning (1) or after sleeping (0). Returns the new value.
define internal i32 @P_await_gen(ptr %%s, i32 %%seen, ptr %%budget, ptr %%spun) {
entry:
  %%sleepers = getelementptr inbounds i8, ptr %%s, i64 %(sleepers)d
  store i32 1, ptr %%spun, align 4
  br label %%restart
restart:
  %%t0 = call i64 @P_now()
  %%limit = load i64, ptr %%budget, align 8
  br label %%spin
spin:
  %%i = phi i64 [0, %%restart], [%%i1, %%turn], [%%i1, %%clock_ok]
  %%prev = phi i64 [%%t0, %%restart], [%%prev, %%turn], [%%t, %%clock_ok]
  %%g = load atomic i32, ptr %%s acquire, align 4
  %%changed = icmp ne i32 %%g, %%seen
  br i1 %%changed, label %%done, label %%wait
wait:
  HINT
  %%i1 = add i64 %%i, 1
  %%m = and i64 %%i1, 63
  %%check = icmp eq i64 %%m, 0
  br i1 %%check, label %%clock, label %%turn
turn:
  br label %%spin
clock:
  %%t = call i64 @P_now()
  %%stop = call i1 @P_waited(i64 %%t, i64 %%t0, i64 %%prev, i64 %%limit)
  br i1 %%stop, label %%give_up, label %%clock_ok
clock_ok:
  br label %%spin
give_up:
  %%gap = sub i64 %%t, %%prev
  %%preempted = icmp sgt i64 %%gap, %(preempt)d
  br i1 %%preempted, label %%shrink, label %%sleep
shrink:
  store i64 0, ptr %%budget, align 8
  br label %%sleep
sleep:
  store i32 0, ptr %%spun, align 4
  %%a = atomicrmw add ptr %%sleepers, i32 1 seq_cst
  %%g2 = load atomic i32, ptr %%s seq_cst, align 4
  %%same = icmp eq i32 %%g2, %%seen
  br i1 %%same, label %%block, label %%awake
block:
  call void @P_futex_wait(ptr %%s, i32 %%seen)
  br label %%awake
awake:
  %%c = atomicrmw sub ptr %%sleepers, i32 1 seq_cst
  br label %%restart
done:
  ret i32 %%g
}

; run chunk %%i of the dispatch described in the state
define internal void @P_chunk(ptr %%s, i64 %%i) {
entry:
  %%fn_p = getelementptr inbounds i8, ptr %%s, i64 %(fn)d
  %%fn = load ptr, ptr %%fn_p, align 8
  %%table_p = getelementptr inbounds i8, ptr %%s, i64 %(table)d
  %%table = load ptr, ptr %%table_p, align 8
  %%tables_p = getelementptr inbounds i8, ptr %%s, i64 %(tables)d
  %%tables = load ptr, ptr %%tables_p, align 8
  %%ranges_p = getelementptr inbounds i8, ptr %%s, i64 %(ranges)d
  %%ranges = load ptr, ptr %%ranges_p, align 8
  %%per = icmp ne ptr %%tables, null
  br i1 %%per, label %%own, label %%call
own:
  %%tp = getelementptr inbounds ptr, ptr %%tables, i64 %%i
  %%own_table = load ptr, ptr %%tp, align 8
  br label %%call
call:
  %%t = phi ptr [%%table, %%entry], [%%own_table, %%own]
  %%j = shl i64 %%i, 1
  %%bp = getelementptr inbounds i64, ptr %%ranges, i64 %%j
  %%b = load i64, ptr %%bp, align 8
  %%ep = getelementptr inbounds i64, ptr %%bp, i64 1
  %%e = load i64, ptr %%ep, align 8
  call void %%fn(ptr %%t, i64 %%b, i64 %%e)
  %%remaining = getelementptr inbounds i8, ptr %%s, i64 %(remaining)d
  %%left = atomicrmw sub ptr %%remaining, i32 1 seq_cst
  %%last = icmp eq i32 %%left, 1
  br i1 %%last, label %%notify, label %%done
notify:
  %%waiting = getelementptr inbounds i8, ptr %%s, i64 %(waiting)d
  %%wt = load atomic i32, ptr %%waiting seq_cst, align 4
  %%asleep = icmp ne i32 %%wt, 0
  br i1 %%asleep, label %%wake, label %%done
wake:
  call void @P_futex_wake(ptr %%remaining, i64 1)
  br label %%done
done:
  ret void
}

; claim and run chunks of generation %%g until none is left unclaimed; returns how many ran
define internal i64 @P_work(ptr %%s, i32 %%g) {
entry:
  %%claim = getelementptr inbounds i8, ptr %%s, i64 %(claim)d
  %%g64 = zext i32 %%g to i64
  br label %%look
look:
  %%ran = phi i64 [0, %%entry], [%%ran, %%take], [%%ran1, %%run]
  %%word = load atomic i64, ptr %%claim acquire, align 8
  %%wg = lshr i64 %%word, 32
  %%same = icmp eq i64 %%wg, %%g64
  br i1 %%same, label %%count, label %%done
count:
  %%next = and i64 %%word, 65535
  %%n0 = lshr i64 %%word, 16
  %%n = and i64 %%n0, 65535
  %%left = icmp ult i64 %%next, %%n
  br i1 %%left, label %%take, label %%done
take:
  %%word1 = add i64 %%word, 1
  %%pair = cmpxchg ptr %%claim, i64 %%word, i64 %%word1 acq_rel acquire
  %%ok = extractvalue { i64, i1 } %%pair, 1
  br i1 %%ok, label %%run, label %%look
run:
  call void @P_chunk(ptr %%s, i64 %%next)
  %%ran1 = add i64 %%ran, 1
  br label %%look
done:
  ret i64 %%ran
}

; spin until no chunk is running, then sleep on the count (the last finisher wakes the caller).
; The spin lasts at most as long as the caller's own chunks took (+ grow_ns): a worker's chunk
; (as long) that has not finished by then was started late or lost its core, and spinning on
; would only keep a core from it.
define internal void @P_await_done(ptr %%s, i64 %%own) {
entry:
  %%remaining = getelementptr inbounds i8, ptr %%s, i64 %(remaining)d
  %%waiting = getelementptr inbounds i8, ptr %%s, i64 %(waiting)d
  %%spin_p = getelementptr inbounds i8, ptr %%s, i64 %(spin)d
  %%most = load i64, ptr %%spin_p, align 8
  %%expected = add i64 %%own, %(grow)d
  %%longer = icmp ugt i64 %%expected, %%most
  %%limit = select i1 %%longer, i64 %%most, i64 %%expected
  %%t0 = call i64 @P_now()
  br label %%spin
spin:
  %%i = phi i64 [0, %%entry], [%%i1, %%turn], [%%i1, %%clock_ok]
  %%prev = phi i64 [%%t0, %%entry], [%%prev, %%turn], [%%t, %%clock_ok]
  %%p = load atomic i32, ptr %%remaining acquire, align 4
  %%zero = icmp eq i32 %%p, 0
  br i1 %%zero, label %%done, label %%wait
wait:
  HINT
  %%i1 = add i64 %%i, 1
  %%m = and i64 %%i1, 63
  %%check = icmp eq i64 %%m, 0
  br i1 %%check, label %%clock, label %%turn
turn:
  br label %%spin
clock:
  %%t = call i64 @P_now()
  %%stop = call i1 @P_waited(i64 %%t, i64 %%t0, i64 %%prev, i64 %%limit)
  br i1 %%stop, label %%sleep, label %%clock_ok
clock_ok:
  br label %%spin
sleep:
  store atomic i32 1, ptr %%waiting seq_cst, align 4
  %%p2 = load atomic i32, ptr %%remaining seq_cst, align 4
  %%zero2 = icmp eq i32 %%p2, 0
  br i1 %%zero2, label %%woke, label %%block
block:
  call void @P_futex_wait(ptr %%remaining, i32 %%p2)
  br label %%sleep
woke:
  store atomic i32 0, ptr %%waiting monotonic, align 4
  br label %%done
done:
  ret void
}

; a worker: wait for a generation, claim its chunks, adapt the spin budget, repeat. A claimed
; chunk, or a sleep that woke too late, adds grow_ns to the budget, up to spin_ns; a spin that
; saw the dispatch but claimed nothing was preempted meanwhile: no spinning until it adds up.
; (Under CFS a thread that spins loses its place to the other processes' threads, and then is
; preempted in the middle of a chunk the caller must wait for; a sleeper is woken promptly.)
define void @P_worker(ptr %%s) {
entry:
  %%stop = getelementptr inbounds i8, ptr %%s, i64 %(stop)d
  %%spin_p = getelementptr inbounds i8, ptr %%s, i64 %(spin)d
  %%most = load i64, ptr %%spin_p, align 8
  %%budget = alloca i64, align 8
  %%spun = alloca i32, align 4
  store i64 %%most, ptr %%budget, align 8
  br label %%loop
loop:
  %%seen = phi i32 [0, %%entry], [%%g, %%worked]
  %%g = call i32 @P_await_gen(ptr %%s, i32 %%seen, ptr %%budget, ptr %%spun)
  %%stopping = load atomic i32, ptr %%stop acquire, align 4
  %%is_stop = icmp ne i32 %%stopping, 0
  br i1 %%is_stop, label %%exit, label %%work
work:
  %%ran = call i64 @P_work(ptr %%s, i32 %%g)
  %%was_spinning = load i32, ptr %%spun, align 4
  %%b = load i64, ptr %%budget, align 8
  %%got = icmp ugt i64 %%ran, 0
  %%late_spinning = icmp ne i32 %%was_spinning, 0
  %%plus = add i64 %%b, %(grow)d
  %%missed = select i1 %%late_spinning, i64 0, i64 %%plus
  %%want = select i1 %%got, i64 %%plus, i64 %%missed
  %%high = icmp ugt i64 %%want, %%most
  %%nb = select i1 %%high, i64 %%most, i64 %%want
  store i64 %%nb, ptr %%budget, align 8
  br label %%worked
worked:
  br label %%loop
exit:
  ret void
}

; fn(table or tables[i], ranges[2i], ranges[2i+1]) for i < n, on this thread alone
define internal void @P_inline(ptr %%s, ptr %%fn, ptr %%table, ptr %%tables, ptr %%r, i64 %%n) {
entry:
  br label %%body
body:
  %%i = phi i64 [0, %%entry], [%%i1, %%call]
  %%per = icmp ne ptr %%tables, null
  br i1 %%per, label %%own, label %%call
own:
  %%tp = getelementptr inbounds ptr, ptr %%tables, i64 %%i
  %%own_table = load ptr, ptr %%tp, align 8
  br label %%call
call:
  %%t = phi ptr [%%table, %%body], [%%own_table, %%own]
  %%j = shl i64 %%i, 1
  %%bp = getelementptr inbounds i64, ptr %%r, i64 %%j
  %%b = load i64, ptr %%bp, align 8
  %%ep = getelementptr inbounds i64, ptr %%bp, i64 1
  %%e = load i64, ptr %%ep, align 8
  call void %%fn(ptr %%t, i64 %%b, i64 %%e)
  %%i1 = add i64 %%i, 1
  %%more = icmp slt i64 %%i1, %%n
  br i1 %%more, label %%body, label %%done
done:
  ret void
}

; n >= 2 chunks (at most MAX_CHUNKS); returns when all have run
define void @P_run(ptr %%s, ptr %%fn, ptr %%table, ptr %%tables, ptr %%ranges, i64 %%n) {
entry:
  %%busy = getelementptr inbounds i8, ptr %%s, i64 %(busy)d
  %%pair = cmpxchg ptr %%busy, i32 0, i32 1 acquire monotonic
  %%ok = extractvalue { i32, i1 } %%pair, 1
  br i1 %%ok, label %%pool, label %%inline
inline:
  call void @P_inline(ptr %%s, ptr %%fn, ptr %%table, ptr %%tables, ptr %%ranges, i64 %%n)
  ret void
pool:
  %%fn_p = getelementptr inbounds i8, ptr %%s, i64 %(fn)d
  store ptr %%fn, ptr %%fn_p, align 8
  %%table_p = getelementptr inbounds i8, ptr %%s, i64 %(table)d
  store ptr %%table, ptr %%table_p, align 8
  %%tables_p = getelementptr inbounds i8, ptr %%s, i64 %(tables)d
  store ptr %%tables, ptr %%tables_p, align 8
  %%ranges_p = getelementptr inbounds i8, ptr %%s, i64 %(ranges)d
  store ptr %%ranges, ptr %%ranges_p, align 8
  %%remaining = getelementptr inbounds i8, ptr %%s, i64 %(remaining)d
  %%n32 = trunc i64 %%n to i32
  store atomic i32 %%n32, ptr %%remaining monotonic, align 4
  %%g0 = load atomic i32, ptr %%s monotonic, align 4
  %%g1 = add i32 %%g0, 1
  %%g64 = zext i32 %%g1 to i64
  %%hi = shl i64 %%g64, 32
  %%n16 = shl i64 %%n, 16
  %%w0 = or i64 %%hi, %%n16
  %%word = or i64 %%w0, 1
  %%claim = getelementptr inbounds i8, ptr %%s, i64 %(claim)d
  store atomic i64 %%word, ptr %%claim release, align 8
  store atomic i32 %%g1, ptr %%s seq_cst, align 4
  %%sleepers = getelementptr inbounds i8, ptr %%s, i64 %(sleepers)d
  %%sl = load atomic i32, ptr %%sleepers seq_cst, align 4
  %%some = icmp ne i32 %%sl, 0
  br i1 %%some, label %%wake, label %%mine
wake:
  %%others = sub i64 %%n, 1
  call void @P_futex_wake(ptr %%s, i64 %%others)
  br label %%mine
mine:
  %%started = call i64 @P_now()
  call void @P_chunk(ptr %%s, i64 0)
  %%mine_ran = call i64 @P_work(ptr %%s, i32 %%g1)
  %%finished = call i64 @P_now()
  %%own = sub i64 %%finished, %%started
  call void @P_await_done(ptr %%s, i64 %%own)
  store atomic i32 0, ptr %%busy release, align 4
  ret void
}

; take the pool for good (1), or 0 while a dispatch holds it; then wake every worker to exit
define i32 @P_try_stop(ptr %%s) {
entry:
  %%busy = getelementptr inbounds i8, ptr %%s, i64 %(busy)d
  %%pair = cmpxchg ptr %%busy, i32 0, i32 1 acquire monotonic
  %%ok = extractvalue { i32, i1 } %%pair, 1
  br i1 %%ok, label %%stop, label %%held
held:
  ret i32 0
stop:
  %%stop_p = getelementptr inbounds i8, ptr %%s, i64 %(stop)d
  store atomic i32 1, ptr %%stop_p seq_cst, align 4
  %%g = atomicrmw add ptr %%s, i32 1 seq_cst
  call void @P_futex_wake(ptr %%s, i64 2147483647)
  ret i32 1
}
"""
