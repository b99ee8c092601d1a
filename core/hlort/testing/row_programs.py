"""HLO text of the row-reduction programs the GPU schedule tests use at several sizes (the seed's
``reduce_sum(x + y*z)`` over rows or over everything, softmax): one definition, sized by the
caller (small for the host simulator, full size for the PTX checks)."""

REDUCERS = """
add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
"""


def seed_row_sum(rows: int, cols: int) -> str:
    """``reduce_sum(x + y*z, axis=1)`` on f32[rows, cols]."""
    t = f"f32[{rows},{cols}]"
    return f"""HloModule seed
{REDUCERS}
ENTRY main {{
  x = {t} parameter(0)
  y = {t} parameter(1)
  z = {t} parameter(2)
  yz = {t} multiply(y, z)
  s = {t} add(x, yz)
  zero = f32[] constant(0)
  ROOT r = f32[{rows}] reduce(s, zero), dimensions={{1}}, to_apply=add_f
}}
"""


def seed_full_sum(n: int, name: str = "full_seed") -> str:
    """``reduce_sum(x + y*z)`` of f32[n] to a scalar."""
    t = f"f32[{n}]"
    return f"""HloModule {name}
{REDUCERS}
ENTRY main {{
  x = {t} parameter(0)
  y = {t} parameter(1)
  z = {t} parameter(2)
  yz = {t} multiply(y, z)
  s = {t} add(x, yz)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(s, zero), dimensions={{0}}, to_apply=add_f
}}
"""


def softmax_rows(rows: int, cols: int) -> str:
    """Softmax over the rows of f32[rows, cols], as XLA writes it (max, exp, sum, divide)."""
    t, r = f"f32[{rows},{cols}]", f"f32[{rows}]"
    return f"""HloModule softmax
{REDUCERS}
ENTRY main {{
  x = {t} parameter(0)
  ninf = f32[] constant(-inf)
  mx = {r} reduce(x, ninf), dimensions={{1}}, to_apply=max_f
  mb = {t} broadcast(mx), dimensions={{0}}
  d = {t} subtract(x, mb)
  e = {t} exponential(d)
  zero = f32[] constant(0)
  s = {r} reduce(e, zero), dimensions={{1}}, to_apply=add_f
  sb = {t} broadcast(s), dimensions={{0}}
  ROOT o = {t} divide(e, sb)
}}
"""
