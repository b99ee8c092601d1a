"""The simulator's DMA and matrix-unit instructions: moving tiles between HBM and VMEM (blocked,
bulk, im2col), waiting on their semaphores, and the MXU's push/matmul/pop with its bf16 splits.

A mixin of :class:`hlort_tpusim.simulator.Simulator`: the methods use its state (HBM arrays,
VMEM slots, registers, the timing model).
"""

from __future__ import annotations

import math

import numpy as np

from hlort import dtypes
from hlort.errors import Internal
from hlort_tpusim import index_maps
from hlort_tpusim.executors import executes
from hlort_tpusim.isa import Instr, evaluate
from hlort_tpusim.machine_config import MachineConfig


class TransferAndMatrixExecutors:
    """DMA and MXU executors, registered in :data:`hlort_tpusim.executors.EXECUTORS`."""

    # -- DMA ------------------------------------------------------------------------------------
    @executes("dma.in")
    def _op_dma_in(self, ins: Instr, a: dict) -> None:
        slot = evaluate(a["slot"], self.env)
        access = a["access"]
        kind = access["kind"]
        if self.dry and kind == "block":
            valid = self._block_valid(access)
            self.valid[(a["dst"], slot)] = valid
            nbytes = math.prod(valid) * self.program.buffers[a["src"]].shape.dtype.itemsize
            self.timing.dma(
                nbytes,
                [self._hkey(a["src"])],
                [("vmem", a["dst"], slot)],
                sem=evaluate(a["sem"], self.env),
            )
            return
        src = self.array(a["src"])
        if kind == "block":
            tile, valid = self._block_read(a["src"], src, access)
        elif kind == "flat":
            lo, hi = index_maps.tile_bounds(
                {"kind": "flat", "dims": src.shape, "tile": access["tile"]},
                [evaluate(access["index"], self.env)],
            )[0]
            tile = np.array(src.reshape(-1)[lo:hi])
            valid = tile.shape
        else:
            index = [evaluate(e, self.env) for e in access["index"]]
            tile = np.array(index_maps.gather(src, access["space"], access["maps"], index))
            valid = tile.shape
        self.vmem[a["dst"]][slot] = tile
        self.valid[(a["dst"], slot)] = valid
        nbytes = math.prod(valid) * src.dtype.itemsize
        self.timing.dma(
            nbytes,
            [self._hkey(a["src"])],
            [("vmem", a["dst"], slot)],
            sem=evaluate(a["sem"], self.env),
        )

    def _block_valid(self, access: dict) -> tuple[int, int]:
        _, rows, cols = access["view"]
        tr, tc = access["tile"]
        _, r, c = (evaluate(e, self.env) for e in access["index"])
        return (max(0, min(tr, rows - r * tr)), max(0, min(tc, cols - c * tc)))

    def _bulk(self, spec: dict) -> None:
        """Compute a whole kernel at once (see Kernel.bulk); the replay then only times it."""
        if spec["kind"] != "matmul":
            raise Internal(f"unknown bulk kernel kind {spec['kind']!r}")
        b, m, k, n = spec["sizes"]
        lhs = np.transpose(self.array(spec["lhs"]), spec["lhs_perm"]).reshape(b, m, k)
        rhs = np.transpose(self.array(spec["rhs"]), spec["rhs_perm"]).reshape(b, k, n)
        x, w = _split(lhs, spec["precision"]), _split(rhs, spec["precision"])
        with np.errstate(over="ignore", invalid="ignore"):
            if spec["precision"] == "bf16x3":
                out = x[0] @ w[0] + (x[0] @ w[1] + x[1] @ w[0])
            else:
                out = x[0] @ w[0]
        dst = self.array(spec["out"])
        dst.reshape(b, m, n)[...] = out.astype(dst.dtype)

    def _block_read(self, buf: int, src: np.ndarray, access: dict) -> tuple[np.ndarray, tuple]:
        perm = tuple(access["perm"])
        key = (buf, perm)
        canon = self._canon.get(key)
        if canon is None:
            canon = np.transpose(src, perm).reshape(access["view"])
            self._canon[key] = canon
        tr, tc = access["tile"]
        b, r, c = (evaluate(e, self.env) for e in access["index"])
        part = canon[b, r * tr : (r + 1) * tr, c * tc : (c + 1) * tc]
        if part.shape == (tr, tc):
            return np.array(part), part.shape
        tile = np.zeros((tr, tc), canon.dtype)
        tile[: part.shape[0], : part.shape[1]] = part
        return tile, part.shape

    @executes("dma.out")
    def _op_dma_out(self, ins: Instr, a: dict) -> None:
        slot = evaluate(a["slot"], self.env)
        if self.dry and a["access"]["kind"] == "block":
            nbytes = (
                math.prod(self._block_valid(a["access"]))
                * self.program.buffers[a["dst"]].shape.dtype.itemsize
            )
            self.timing.dma(
                nbytes,
                [("vmem", a["src"], slot)],
                [self._hkey(a["dst"])],
                sem=evaluate(a["sem"], self.env),
                to_hbm=True,
            )
            return
        dst = self.array(a["dst"])
        tile = self.vmem[a["src"]][slot]
        access = a["access"]
        if access["kind"] == "block":
            canon = dst.reshape(access["view"])
            tr, tc = access["tile"]
            b, r, c = (evaluate(e, self.env) for e in access["index"])
            part = canon[b, r * tr : (r + 1) * tr, c * tc : (c + 1) * tc]
            part[...] = tile[: part.shape[0], : part.shape[1]].astype(dst.dtype, copy=False)
            nbytes = part.size * dst.dtype.itemsize
        else:
            space = {"kind": "flat", "dims": dst.shape, "tile": access["tile"]}
            index = [evaluate(access["index"], self.env)]
            lo, hi = index_maps.tile_bounds(space, index)[0]
            values = (
                np.broadcast_to(np.asarray(tile), (hi - lo,))
                if np.ndim(tile) == 0
                else np.asarray(tile).reshape(-1)[: hi - lo]
            )
            dst.reshape(-1)[lo:hi] = values.astype(dst.dtype, copy=False)
            nbytes = (hi - lo) * dst.dtype.itemsize
        self.timing.dma(
            nbytes,
            [("vmem", a["src"], slot)],
            [self._hkey(a["dst"])],
            sem=evaluate(a["sem"], self.env),
            to_hbm=True,
        )

    @executes("dma.copy")
    def _op_dma_copy(self, ins: Instr, a: dict) -> None:
        src, dst = self.array(a["src"]), self.array(a["dst"])
        if src.dtype == dst.dtype:
            np.copyto(dst, src.reshape(dst.shape))
        else:
            dst.reshape(-1).view(np.uint8)[:] = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
        self.timing.dma(
            dst.nbytes,
            [self._hkey(a["src"])],
            [self._hkey(a["dst"])],
            to_hbm=True,
            hbm_bytes=2 * dst.nbytes,
        )

    @executes("dma.im2col")
    def _op_dma_im2col(self, ins: Instr, a: dict) -> None:
        from hlort_tpusim.compiler.convolution import im2col

        src, dst = self.array(a["src"]), self.array(a["dst"])
        np.copyto(dst, im2col(src, a["conv"]).astype(dst.dtype, copy=False))
        self.timing.dma(
            dst.nbytes,
            [self._hkey(a["src"])],
            [self._hkey(a["dst"])],
            to_hbm=True,
            hbm_bytes=src.nbytes + dst.nbytes,
        )

    @executes("wait")
    def _op_wait(self, ins: Instr, a: dict) -> None:
        self.timing.wait([evaluate(s, self.env) for s in a["sems"]])

    # -- MXU --------------------------------------------------------------------------------
    @executes("mxu.push")
    def _op_mxu_push(self, ins: Instr, a: dict) -> None:
        slot = evaluate(a["slot"], self.env)
        dims = self.decls[a["src"]].dims
        w = None if self.dry else _split(self.vmem[a["src"]][slot], a["precision"])
        self.mxu_w = (w, self.valid[(a["src"], slot)])
        blocks = (dims[0] // self.config.mxu_dim) * (dims[1] // self.config.mxu_dim)
        self.timing.mxu_push(("vmem", a["src"], slot), blocks, a["precision"])

    @executes("mxu.matmul")
    def _op_mxu_matmul(self, ins: Instr, a: dict) -> None:
        slot = evaluate(a["slot"], self.env)
        (w_parts, (wk, wn)) = self.mxu_w
        if not self.dry:
            x_parts = _split(self.vmem[a["src"]][slot], a["precision"])
            with np.errstate(over="ignore", invalid="ignore"):
                if a["precision"] == "bf16x3":
                    out = x_parts[0] @ w_parts[0] + (
                        x_parts[0] @ w_parts[1] + x_parts[1] @ w_parts[0]
                    )
                else:
                    out = x_parts[0] @ w_parts[0]
            self.mxu_out = out
        vr, vk = self.valid[(a["src"], slot)]
        self.timing.mxu_matmul(
            ("vmem", a["src"], slot), a["blocks"], a["rows"], a["precision"], float(vr) * vk * wn
        )

    @executes("mxu.pop")
    def _op_mxu_pop(self, ins: Instr, a: dict) -> None:
        acc = evaluate(a["accumulate"], self.env)
        dst = self.vmem[a["dst"]]
        if not self.dry:
            if acc and dst[0] is not None:
                dst[0] += self.mxu_out
            else:
                dst[0] = np.array(self.mxu_out, dtype=np.float32)
        self.timing.mxu_pop(
            ("vmem", a["dst"], 0),
            vregs_of(self.decls[a["dst"]].dims, np.dtype(np.float32), self.config),
        )


def round_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round to the nearest bf16 (ties to even), returned as float32: the MXU's input rounding.
    (ml_dtypes' bfloat16 through hlort.dtypes: loaded on the first matmul, not at import.)"""
    bf16 = dtypes.BF16.numpy
    if x.dtype == bf16:
        return x.astype(np.float32)
    return x.astype(np.float32).astype(bf16).astype(np.float32)


def _split(x: np.ndarray, precision: str) -> list[np.ndarray]:
    """The bf16 pieces the MXU multiplies: 1 (DEFAULT), hi+lo (HIGH); HIGHEST is exact f32."""
    if precision == "bf16":
        return [round_to_bf16(x)]
    if precision == "bf16x3":
        hi = round_to_bf16(x)
        return [hi, round_to_bf16(x.astype(np.float32) - hi)]
    return [x.astype(np.float32)]


def vregs_of(shape: tuple[int, ...], dtype: np.dtype, config: MachineConfig) -> int:
    """How many vector registers a tile of ``shape`` fills (32-bit words, at least one)."""
    words = math.prod(shape) * max(4, dtype.itemsize) // 4
    return max(1, -(-words // config.vreg_elements))
