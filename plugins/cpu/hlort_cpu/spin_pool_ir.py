"""The native pool's LLVM IR: worker loop, dispatcher and stop, as XLA's CPU runtime (Eigen's
pool) runs them: workers spin briefly on a generation counter, then sleep on a futex.

Waking a sleeping thread costs ~100 us on a small VM (measured: a pthread cond-var wake), a
spinning handoff ~0.1 us, while many of a program's kernels are 10-200 us of work. So a worker
that finished a chunk spins (``pause``, clock checked every 64 turns) for ``spin_ns`` before it
sleeps, and the next kernel of the program finds it awake. The caller publishes each worker's
chunk in the worker's slot, bumps the generation (seq_cst), wakes sleepers only when some
sleep, runs chunk 0 itself, and waits for the pending count to reach zero the same way (spin,
then futex). A dispatch that finds the pool busy (another device's thread) runs its chunks
inline: nothing waits on anything but running chunks, so nothing deadlocks.

The state is one zeroed block (byte offsets below), one cache line per contended word; slot
``w`` (worker ``w``) holds fn, table, begin, end and the generation it was written for, so a
worker that has no chunk in a generation (fewer chunks than workers) skips it. Linux only:
futex through libc's ``syscall``, ``clock_gettime(CLOCK_MONOTONIC)``.
"""

from __future__ import annotations

import platform

GEN, SLEEPERS, PENDING, WAITING, BUSY, STOP, SPIN_NS = 0, 64, 128, 132, 192, 196, 200
SLOTS, SLOT_BYTES = 256, 64
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


def state_bytes(workers: int) -> int:
    return SLOTS + SLOT_BYTES * max(workers, 1)


def pool_ir(prefix: str) -> str:
    """The module: ``{prefix}_worker(state, index)``, ``{prefix}_run(state, fn, table, tables,
    ranges, n, workers)`` and ``{prefix}_try_stop(state) -> i32``."""
    futex, hint = _ARCH[platform.machine().lower()]
    name, args = hint.split("(")
    declare = f"declare void @llvm.{name}({'i32' if args != ')' else ''})"
    text = _TEMPLATE.replace("@P_", f"@{prefix}_").replace("FUTEX", str(futex))
    text = text.replace("DECLARE_HINT", declare).replace("HINT", f"call void @llvm.{hint}")
    return text % {
        "sleepers": SLEEPERS,
        "pending": PENDING,
        "waiting": WAITING,
        "busy": BUSY,
        "stop": STOP,
        "spin": SPIN_NS,
        "slots": SLOTS,
        "slot": SLOT_BYTES,
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

; every 64th spin: 1 once spin_ns have passed since t0 (time to sleep)
define internal i1 @P_waited(ptr %%s, i64 %%t0) {
  %%spin_p = getelementptr inbounds i8, ptr %%s, i64 %(spin)d
  %%spin_ns = load i64, ptr %%spin_p, align 8
  %%t = call i64 @P_now()
  %%el = sub i64 %%t, %%t0
  %%over = icmp sgt i64 %%el, %%spin_ns
  ret i1 %%over
}

; spin until the generation differs from %%seen, then sleep on it; returns the new value
define internal i32 @P_await_gen(ptr %%s, i32 %%seen) {
entry:
  %%sleepers = getelementptr inbounds i8, ptr %%s, i64 %(sleepers)d
  br label %%restart
restart:
  %%t0 = call i64 @P_now()
  br label %%spin
spin:
  %%i = phi i64 [0, %%restart], [%%i1, %%turn], [%%i1, %%clock]
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
  %%over = call i1 @P_waited(ptr %%s, i64 %%t0)
  br i1 %%over, label %%sleep, label %%spin
sleep:
  %%a = atomicrmw add ptr %%sleepers, i32 1 seq_cst
  %%g2 = load atomic i32, ptr %%s seq_cst, align 4
  %%same = icmp eq i32 %%g2, %%seen
  br i1 %%same, label %%block, label %%awake
block:
  call void @P_futex_wait(ptr %%s, i32 %%seen)
  br label %%awake
awake:
  %%b = atomicrmw sub ptr %%sleepers, i32 1 seq_cst
  br label %%restart
done:
  ret i32 %%g
}

; spin until the pending count is zero, then sleep on it (the last worker wakes the caller)
define internal void @P_await_done(ptr %%s) {
entry:
  %%pending = getelementptr inbounds i8, ptr %%s, i64 %(pending)d
  %%waiting = getelementptr inbounds i8, ptr %%s, i64 %(waiting)d
  %%t0 = call i64 @P_now()
  br label %%spin
spin:
  %%i = phi i64 [0, %%entry], [%%i1, %%turn], [%%i1, %%clock]
  %%p = load atomic i32, ptr %%pending acquire, align 4
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
  %%over = call i1 @P_waited(ptr %%s, i64 %%t0)
  br i1 %%over, label %%sleep, label %%spin
sleep:
  store atomic i32 1, ptr %%waiting seq_cst, align 4
  %%p2 = load atomic i32, ptr %%pending seq_cst, align 4
  %%zero2 = icmp eq i32 %%p2, 0
  br i1 %%zero2, label %%woke, label %%block
block:
  call void @P_futex_wait(ptr %%pending, i32 %%p2)
  br label %%sleep
woke:
  store atomic i32 0, ptr %%waiting monotonic, align 4
  br label %%done
done:
  ret void
}

; fn(table or tables[i], ranges[2i], ranges[2i+1]) for i in [lo, hi)
define internal void @P_run_range(ptr %%f, ptr %%table, ptr %%tables, ptr %%r, i64 %%lo, i64 %%hi) {
entry:
  %%any = icmp slt i64 %%lo, %%hi
  br i1 %%any, label %%body, label %%done
body:
  %%i = phi i64 [%%lo, %%entry], [%%i1, %%call]
  %%per = icmp ne ptr %%tables, null
  br i1 %%per, label %%own_table, label %%call
own_table:
  %%tp = getelementptr inbounds ptr, ptr %%tables, i64 %%i
  %%own = load ptr, ptr %%tp, align 8
  br label %%call
call:
  %%t = phi ptr [%%table, %%body], [%%own, %%own_table]
  %%j = shl i64 %%i, 1
  %%bp = getelementptr inbounds i64, ptr %%r, i64 %%j
  %%b = load i64, ptr %%bp, align 8
  %%ep = getelementptr inbounds i64, ptr %%bp, i64 1
  %%e = load i64, ptr %%ep, align 8
  call void %%f(ptr %%t, i64 %%b, i64 %%e)
  %%i1 = add i64 %%i, 1
  %%more = icmp slt i64 %%i1, %%hi
  br i1 %%more, label %%body, label %%done
done:
  ret void
}

define void @P_worker(ptr %%s, i64 %%w) {
entry:
  %%off = mul i64 %%w, %(slot)d
  %%off2 = add i64 %%off, %(slots)d
  %%slot = getelementptr inbounds i8, ptr %%s, i64 %%off2
  %%stop = getelementptr inbounds i8, ptr %%s, i64 %(stop)d
  %%pending = getelementptr inbounds i8, ptr %%s, i64 %(pending)d
  %%waiting = getelementptr inbounds i8, ptr %%s, i64 %(waiting)d
  %%slot_gen = getelementptr inbounds i8, ptr %%slot, i64 32
  %%table_p = getelementptr inbounds i8, ptr %%slot, i64 8
  %%begin_p = getelementptr inbounds i8, ptr %%slot, i64 16
  %%end_p = getelementptr inbounds i8, ptr %%slot, i64 24
  br label %%loop
loop:
  %%seen = phi i32 [0, %%entry], [%%g, %%skip], [%%g, %%ran]
  %%g = call i32 @P_await_gen(ptr %%s, i32 %%seen)
  %%stopping = load atomic i32, ptr %%stop acquire, align 4
  %%is_stop = icmp ne i32 %%stopping, 0
  br i1 %%is_stop, label %%exit, label %%check
check:
  %%sg = load atomic i32, ptr %%slot_gen acquire, align 4
  %%mine = icmp eq i32 %%sg, %%g
  br i1 %%mine, label %%run, label %%skip
skip:
  br label %%loop
run:
  %%fn = load ptr, ptr %%slot, align 8
  %%table = load ptr, ptr %%table_p, align 8
  %%b = load i64, ptr %%begin_p, align 8
  %%e = load i64, ptr %%end_p, align 8
  call void %%fn(ptr %%table, i64 %%b, i64 %%e)
  %%left = atomicrmw sub ptr %%pending, i32 1 seq_cst
  %%last = icmp eq i32 %%left, 1
  br i1 %%last, label %%notify, label %%ran
notify:
  %%wt = load atomic i32, ptr %%waiting seq_cst, align 4
  %%asleep = icmp ne i32 %%wt, 0
  br i1 %%asleep, label %%wake, label %%ran
wake:
  call void @P_futex_wake(ptr %%pending, i64 1)
  br label %%ran
ran:
  br label %%loop
exit:
  ret void
}

define void @P_run(ptr %%s, ptr %%fn, ptr %%table, ptr %%tables, ptr %%ranges, i64 %%n, i64 %%w) {
entry:
  %%busy = getelementptr inbounds i8, ptr %%s, i64 %(busy)d
  %%pair = cmpxchg ptr %%busy, i32 0, i32 1 acquire monotonic
  %%ok = extractvalue { i32, i1 } %%pair, 1
  br i1 %%ok, label %%pool, label %%inline
inline:
  call void @P_run_range(ptr %%fn, ptr %%table, ptr %%tables, ptr %%ranges, i64 0, i64 %%n)
  ret void
pool:
  %%n1 = sub i64 %%n, 1
  %%fewer = icmp slt i64 %%n1, %%w
  %%use = select i1 %%fewer, i64 %%n1, i64 %%w
  %%g0 = load atomic i32, ptr %%s monotonic, align 4
  %%g1 = add i32 %%g0, 1
  %%pending = getelementptr inbounds i8, ptr %%s, i64 %(pending)d
  %%use32 = trunc i64 %%use to i32
  store atomic i32 %%use32, ptr %%pending monotonic, align 4
  %%per = icmp ne ptr %%tables, null
  %%any = icmp sgt i64 %%use, 0
  br i1 %%any, label %%publish, label %%published
publish:
  %%i = phi i64 [1, %%pool], [%%i1, %%store]
  br i1 %%per, label %%own_table, label %%store
own_table:
  %%tp = getelementptr inbounds ptr, ptr %%tables, i64 %%i
  %%own = load ptr, ptr %%tp, align 8
  br label %%store
store:
  %%t = phi ptr [%%table, %%publish], [%%own, %%own_table]
  %%wi = sub i64 %%i, 1
  %%off = mul i64 %%wi, %(slot)d
  %%off2 = add i64 %%off, %(slots)d
  %%slot = getelementptr inbounds i8, ptr %%s, i64 %%off2
  %%j = shl i64 %%i, 1
  %%bp = getelementptr inbounds i64, ptr %%ranges, i64 %%j
  %%b = load i64, ptr %%bp, align 8
  %%ep = getelementptr inbounds i64, ptr %%bp, i64 1
  %%e = load i64, ptr %%ep, align 8
  store ptr %%fn, ptr %%slot, align 8
  %%table_p = getelementptr inbounds i8, ptr %%slot, i64 8
  store ptr %%t, ptr %%table_p, align 8
  %%begin_p = getelementptr inbounds i8, ptr %%slot, i64 16
  store i64 %%b, ptr %%begin_p, align 8
  %%end_p = getelementptr inbounds i8, ptr %%slot, i64 24
  store i64 %%e, ptr %%end_p, align 8
  %%slot_gen = getelementptr inbounds i8, ptr %%slot, i64 32
  store atomic i32 %%g1, ptr %%slot_gen monotonic, align 4
  %%i1 = add i64 %%i, 1
  %%more = icmp sle i64 %%i1, %%use
  br i1 %%more, label %%publish, label %%bump
bump:
  store atomic i32 %%g1, ptr %%s seq_cst, align 4
  %%sleepers = getelementptr inbounds i8, ptr %%s, i64 %(sleepers)d
  %%sl = load atomic i32, ptr %%sleepers seq_cst, align 4
  %%some = icmp ne i32 %%sl, 0
  br i1 %%some, label %%wake, label %%published
wake:
  call void @P_futex_wake(ptr %%s, i64 2147483647)
  br label %%published
published:
  call void @P_run_range(ptr %%fn, ptr %%table, ptr %%tables, ptr %%ranges, i64 0, i64 1)
  %%rest = add i64 %%use, 1
  call void @P_run_range(ptr %%fn, ptr %%table, ptr %%tables, ptr %%ranges, i64 %%rest, i64 %%n)
  call void @P_await_done(ptr %%s)
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
