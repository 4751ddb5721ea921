"""One continual-learning training step as data: the tensors it touches and the stages it runs.

A step trains on one batch of `batch` elements: `batch_new` new samples and `batch_replay` latents
from the replay buffer. It runs, in this order (method.md; harness.schedule has the counts per task):

    frozen   the frozen layers' forward on the new samples, `n_f` samples at a time (a "chunk"),
             producing their latents (epoch 1 only: later epochs read them back, see `latents`);
             from the frozen stage `split` on (when set), `n_f2` samples at a time: the deep layers'
             maps are small, so several samples share each weight tile, while the large maps of the
             first layers go one chunk of n_f at a time (n_f2 / n_f of them for each chunk of n_f2)
    latents  latents read from the buffer in flash into the batch: the replayed ones every step,
             the new samples' ones too in epochs after the first; epoch 1 writes the new latents out
    fw       the trained layers' forward on the batch, `n_t` samples at a time. Each weight layer's
             stage stores the kept input channels (xs, for its weight gradient) and what its
             activation's backward needs (stash); the classifier's stage also computes the
             cross-entropy gradient of its logits (the loss)
    bw       the trained layers backward, in reverse, chunk by chunk: the activation's backward runs
             as the prologue of the weight-gradient and input-gradient stages; weight gradients
             accumulate over the chunks of the batch in place
    update   SGD on every trained layer's kept block, once per batch

Fusion. Activations run in their layer's epilogue (forward) and in the consumer's prologue
(backward). A residual add that directly follows the layer producing its first operand runs in that
layer's epilogue; its backward (the skip path's gradient) in the epilogue of the input gradient of
the block's first layer. A global average pool runs in the epilogue of the layer it pools. What
cannot fuse is a stage of its own, with the reason in `Step.notes`: the squeeze-excite channel
scale (its gate needs the pool of the whole map, so it cannot run in the producer's epilogue) and
the average pool's backward (a broadcast of the pooled gradient, written where the producer's
backward reads it).

Tensor layout: FP16, channels last, rows of `cols` channels with the pitch rounded up to even, one
sample's rows contiguous, samples after each other.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from harness.costmodel import layer_p
from harness.errors import UserError
from harness.kernels.spec import cp
from harness.nets import Cut, Layer, Op
from harness.partial import kept_channels
from harness.schedule import CLParams

# How many samples a tensor holds: none (weights), one chunk of the segment it lives in (the frozen
# forward's first or second segment, the tail), the whole batch, or the new samples of the batch.
SCOPES = ("none", "chunk_f", "chunk_f2", "chunk_t", "batch", "new")
CHUNKED = ("chunk_f", "chunk_f2", "chunk_t")   # the loops a stage can repeat in, one chunk at a time
ROLES = ("input", "latent", "act", "weight", "bias", "grad_w", "grad_b", "stored", "stash", "grad", "label",
         "loss", "replay")
MM_KINDS = {"pointwise": "pw", "linear": "linear", "se_reduce": "linear", "se_expand": "linear"}
WG_KINDS = ("mm_wg", "dw_wg")
IG_KINDS = ("mm_ig", "dw_ig")


def deploy_kind(lay: Layer) -> str:
    """pw, linear, dw or conv (a dense k x k convolution, or a strided 1x1 one)."""
    if lay.kind == "depthwise":
        return "dw"
    kind = MM_KINDS.get(lay.kind, "conv")
    return "conv" if kind == "pw" and lay.stride != 1 else kind


@dataclass(frozen=True)
class Tensor:
    name: str
    role: str
    cols: int          # valid channels of a row
    rows: int          # rows per sample (batched scopes) or in all (scope "none")
    scope: str
    layer: str = ""    # the weight layer it belongs to, if any

    @property
    def pitch(self) -> int:
        return cp(self.cols)

    def samples(self, step: "Step") -> int:
        # (tests in turn rather than a table: planning a sweep asks this about a million times)
        s = self.scope
        if s == "none":
            return 1
        if s == "chunk_f":
            return step.n_f
        if s == "chunk_t":
            return step.n_t
        if s == "batch":
            return step.params.batch
        if s == "chunk_f2":
            return step.n_f2
        return step.params.batch_new

    def nbytes(self, step: "Step") -> int:
        return self.rows * self.pitch * 2 * self.samples(step)

    @property
    def sample_bytes(self) -> int:
        return self.rows * self.pitch * 2


@dataclass(frozen=True)
class Stage:
    """One program step of the training step: a kernel with its fused prologue/epilogue.

    `ins`/`outs` map the kernel's operand slots to tensor names; `attrs` carries the geometry and
    the fused work; `repeat` says which loop of the step runs it: "chunk_f" once per frozen chunk,
    "chunk_f2" once per chunk of the frozen forward's second segment, "chunk_t" once per tail chunk,
    "once" once per step (in the tail's loop: with its first chunk)."""
    name: str
    phase: str            # frozen | latents | fw | bw | update
    kind: str             # mm_fw mm_ig mm_wg dw_fw dw_ig dw_wg conv_fw im2col wg_cols ig_cols ig_wt gap_bw scale_fw
                          # scale_bw sgd latents
    ins: dict
    outs: dict
    attrs: dict
    repeat: str
    layer: Layer | None = None
    fused: tuple = ()     # what runs inside this stage besides its kernel, for the plan

    @property
    def tensors(self) -> list[str]:
        return list(dict.fromkeys(list(self.ins.values()) + list(self.outs.values())))

    def sample_macs(self) -> int:
        """Multiply-accumulates of one sample through the stage's product (0 for a stage without one)."""
        a = self.attrs
        if self.kind == "mm_fw":
            return a["h_out"] * a["w_out"] * a["c_in"] * a["c_out"]
        if self.kind == "mm_ig" and a.get("wt"):   # a convolution's input gradient: the MACs of its taps that land
            return a["useful_macs"]
        if self.kind in ("mm_ig", "mm_wg"):
            return a["h_out"] * a["w_out"] * a["k_in"] * a["k_out"]
        if self.kind == "dw_fw":
            return a["h_out"] * a["w_out"] * a["k"] ** 2 * a["c_in"]
        if self.kind in ("dw_ig", "dw_wg"):
            return a["h_out"] * a["w_out"] * a["k"] ** 2 * a["k_in"]
        if self.kind == "conv_fw":
            return a["h_out"] * a["w_out"] * a["k"] ** 2 * a["c_in"] * a["c_out"]
        return 0


@dataclass
class Step:
    cut: Cut
    p: float
    params: CLParams
    n_f: int
    n_t: int
    n_f2: int = 0         # samples per chunk of the frozen forward's second segment (0: none)
    split: int = 0        # index in frozen_stages of the second segment's first stage (0: none)
    tensors: dict = field(default_factory=dict)     # name -> Tensor
    stages: list = field(default_factory=list)      # Stage, in program order within their loop
    notes: list = field(default_factory=list)       # ops that run as a stage of their own, and why

    @property
    def chunks_f(self) -> int:
        return math.ceil(self.params.batch_new / self.n_f) if self.frozen_stages else 0

    @property
    def chunks_f2(self) -> int:
        return self.params.batch_new // self.n_f2 if self.split else 0

    @property
    def deep_from(self) -> str:
        """The first stage of the frozen forward's second segment ("" without one)."""
        return self.frozen_stages[self.split].name if self.split else ""

    def chunk_samples(self, repeat: str) -> int:
        """Samples a chunk of the loop `repeat` holds (1 for a stage that runs once)."""
        return {"chunk_f": self.n_f, "chunk_f2": self.n_f2, "chunk_t": self.n_t}.get(repeat, 1)

    def call_chunk(self, st: Stage, chunk: int) -> int:
        """The chunk argument of a call of `st` in its loop's `chunk`: a first-segment stage's chunk within
        the second segment's chunk it feeds (what places its samples in the tensors that cross over)."""
        return chunk % (self.n_f2 // self.n_f) if self.split and st.repeat == "chunk_f" else chunk

    @property
    def chunks_t(self) -> int:
        return math.ceil(self.params.batch / self.n_t)

    @property
    def frozen_stages(self) -> list[Stage]:
        return [s for s in self.stages if s.phase == "frozen"]

    def backward(self, last: bool) -> list[Stage]:
        """The backward stages of a chunk in program order; in the batch's last chunk each trained
        layer's update follows its last backward stage (nothing after it reads the layer's weights, and
        its weight gradient then lives from its weight gradient to its update only, not to the end of the
        step: short enough to stay in L2 where the whole backward's would not)."""
        bw = [s for s in self.stages if s.phase == "bw"]
        if not last:
            return bw
        updates = {s.layer.name: s for s in self.stages if s.phase == "update"}
        last_of = {s.layer.name: i for i, s in enumerate(bw) if s.layer is not None and s.layer.name in updates}
        out = []
        for i, s in enumerate(bw):
            out.append(s)
            if s.layer is not None and last_of.get(s.layer.name) == i:
                out.append(updates.pop(s.layer.name))
        return out + list(updates.values())

    def sequence(self) -> list[tuple[Stage, int]]:
        """(stage, chunk) in execution order for one epoch-1 training step (the chunk of its loop: a
        first-segment stage's chunk counts over the whole batch; Step.call_chunk gives its argument)."""
        seq = []
        frozen = self.frozen_stages
        if self.split:
            k = self.n_f2 // self.n_f
            for c2 in range(self.chunks_f2):
                for c in range(k):
                    seq += [(s, c2 * k + c) for s in frozen[: self.split]]
                seq += [(s, c2) for s in frozen[self.split:]]
        for c in range(self.chunks_f if not self.split else 0):
            seq += [(s, c) for s in frozen]
        seq += [(s, 0) for s in self.stages if s.phase == "latents"]
        # each chunk of the batch goes forward and straight back (its weight gradients add to the
        # accumulators), so what the backward needs is kept for one chunk, not for the whole batch; the
        # updates run in the last chunk's backward
        for c in range(self.chunks_t):
            seq += [(s, c) for s in self.stages if s.phase == "fw" and (s.repeat != "once" or c == 0)]
            seq += [(s, c if s.phase == "bw" else 0) for s in self.backward(c == self.chunks_t - 1)
                    if s.repeat != "once" or c == 0 or s.phase == "update"]
        return seq

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)


def _canon(alias: dict, t: str) -> str:
    while t in alias:
        t = alias[t]
    return t


class _Walk:
    """Builds a Step: the forward walk (frozen then trained ops), then the backward walk."""

    def __init__(self, cut: Cut, p: float, params: CLParams, n_f: int, n_t: int):
        self.step = Step(cut, p, params, n_f, n_t)
        self.net = cut.network
        self.trained = {id(op) for op in cut.trainable_ops}
        self.alias: dict[str, str] = {}
        self.fused_ops: set[str] = set()
        self.consumers: dict[str, list[Op]] = {}
        for op in self.net.ops:
            for t in op.inputs:
                self.consumers.setdefault(t, []).append(op)
        self.out_of: dict[str, str] = {}      # op output tensor -> tensor that holds it after fusion
        self.pool_of: dict[str, str] = {}     # weight layer -> pooled tensor it writes (fused pool)
        self.stash: dict[str, tuple[str, str]] = {}   # layer -> (stash tensor, "pre" | "post")
        self.se_x: dict[str, str] = {}        # SE scale op -> stash of its input x
        self.se_s: dict[str, str] = {}        # SE scale op -> stash of its gate
        self.xs: dict[str, str] = {}          # layer -> stored input tensor
        self.geom: dict[str, dict] = {}       # layer -> its geometry (attrs of a convolution's own shape)

    # -- tensors -----------------------------------------------------------------------------
    def tensor(self, name, role, cols, rows, scope, layer="") -> str:
        t = Tensor(name, role, cols, rows, scope, layer)
        old = self.step.tensors.get(name)
        if old is not None and old != t:
            raise ValueError(f"tensor {name} defined twice differently: {old} vs {t}")
        self.step.tensors[name] = t
        return name

    def act(self, t: str, scope: str) -> str:
        """The activation tensor holding network tensor `t` (after aliasing) in `scope`."""
        t = _canon(self.alias, t)
        c, h, w = self.net.tensors[t]
        if t in self.latent_set:
            return self.tensor(f"latent:{t}", "latent", c, h * w, "batch")
        if t == self.net.input:
            return self.tensor("input", "input", c, h * w, "chunk_f")
        return self.tensor(f"act:{t}", "act", c, h * w, scope)

    def real_consumers(self, t: str) -> list[Op]:
        out = []
        for op in self.consumers.get(t, []):
            if op.kind == "dropout":
                out += self.real_consumers(op.output)
            else:
                out.append(op)
        return out

    # -- forward -----------------------------------------------------------------------------
    def forward(self):
        cut = self.step.cut
        self.latent_set = set(cut.latent_tensors)
        for op in self.net.ops:
            trained = id(op) in self.trained
            if op.kind == "dropout":   # the identity at inference; its training mask is not modelled
                self.alias[op.output] = op.inputs[0]
                continue
            if op.name in self.fused_ops:
                continue
            if op.layer is not None:
                self.weight_fw(op, trained)
            elif op.kind == "se_scale":
                self.scale_fw(op, trained)
            else:
                raise UserError(f"{self.net.name}: op {op.name} ({op.kind}) does not follow a weight layer it can "
                                f"fuse with; the deployer cannot run it")

    def weight_fw(self, op: Op, trained: bool):
        lay: Layer = op.layer
        step = self.step
        phase, scope = ("fw", "chunk_t") if trained else ("frozen", "chunk_f")
        x = self.act(lay.input, scope)
        kind = deploy_kind(lay)
        p_in, p_out = layer_p(lay, step.p) if trained else (1.0, 1.0)
        k_in = kept_channels(p_in, lay.c_in)
        k_out = k_in if kind == "dw" else kept_channels(p_out, lay.c_out)
        bias = bool(lay.bias or lay.bn_after)
        attrs = dict(kind=kind, c_in=lay.c_in, c_out=lay.c_out, h=lay.h_in, w=lay.w_in, h_out=lay.h_out,
                     w_out=lay.w_out, k=lay.kernel, stride=lay.stride, pad=tuple(lay.pad), k_in=k_in, k_out=k_out,
                     p_in=p_in, p_out=p_out, act=lay.act_after, bias=bias)
        self.geom[lay.name] = attrs
        ins = {"x": x, "w": self.tensor(f"w:{lay.name}", "weight", *self.weight_shape(lay, kind), "none", lay.name)}
        if bias:
            ins["b"] = self.tensor(f"b:{lay.name}", "bias", lay.c_out, 1, "none", lay.name)
        outs = {}
        fused = []
        if lay.act_after != "none":
            fused.append(f"{lay.act_after} ({lay.name})")
        cons = self.real_consumers(lay.output)
        is_classifier = lay is self.net.layers[-1]
        y_tensor = None if is_classifier and trained else lay.output   # the loss is fused: no logits kept
        pool = None
        if len(cons) == 1 and cons[0].kind == "add" and _canon(self.alias, cons[0].inputs[0]) == lay.output:
            add = cons[0]
            self.fused_ops.add(add.name)
            ins["skip"] = self.act(add.inputs[1], scope)
            y_tensor = add.output
            fused.append(f"residual add {add.name}" + (f", then {lay.act_after}" if lay.act_after != "none" else ""))
            attrs["residual"] = add.name
            cons = self.real_consumers(add.output)    # a pool of the sum fuses too
            if len(cons) == 1 and cons[0].kind == "global_avgpool":
                pool, y_tensor = cons[0], None
        elif len(cons) == 1 and cons[0].kind == "global_avgpool":
            pool, y_tensor = cons[0], None
        elif sorted(c.kind for c in cons) == ["global_avgpool", "se_scale"]:
            pool = next(c for c in cons if c.kind == "global_avgpool")
        if pool is not None:
            self.fused_ops.add(pool.name)
            outs["pool"] = self.act(pool.output, scope)
            self.pool_of[lay.name] = pool.output
            fused.append(f"global average pool {pool.name}")
            self.out_of[pool.output] = pool.output
        if y_tensor is not None:
            outs["y"] = self.act(y_tensor, scope)
        # a dense convolution runs as an im2col stage and a product over its columns, except the frozen
        # first layer without fused work (conv_fw: its few input channels are gathered in L1)
        lowered = kind == "conv" and (trained or lay.input != self.net.input or "skip" in ins or pool is not None)
        if trained:
            xs_rows = lay.h_in * lay.w_in
            xs = self.xs[lay.name] = self.tensor(f"xs:{lay.name}", "stored", k_in, xs_rows, "chunk_t", lay.name)
            if not lowered:
                outs["xs"] = xs
            if lay.act_after in ("hswish", "sigmoid", "relu6", "relu"):
                how = "pre" if lay.act_after == "hswish" else "post"
                st = self.tensor(f"stash:{lay.name}", "stash", k_out, lay.h_out * lay.w_out, "chunk_t", lay.name)
                outs["stash"] = st
                self.stash[lay.name] = (st, how)
                fused.append(f"stash of the {'pre' if how == 'pre' else 'post'}-activation ({k_out} channels)")
            scale = [c for c in cons if c.kind == "se_scale" and _canon(self.alias, c.inputs[0]) == lay.output]
            if scale:
                sx = self.tensor(f"sx:{lay.name}", "stash", k_out, lay.h_out * lay.w_out, "chunk_t", lay.name)
                outs["sx"] = sx
                self.se_x[scale[0].name] = sx
                fused.append(f"stash of the squeeze-excite input ({k_out} channels)")
            if is_classifier:
                outs["dz"] = self.tensor("grad:logits", "grad", lay.c_out, 1, "chunk_t")
                outs["loss"] = self.tensor("loss", "loss", 1, 1, "batch")
                ins["label"] = self.tensor("label", "label", 1, 1, "batch")
                fused.append("cross-entropy loss and its gradient")
                attrs["ce"] = True
        elif is_classifier:
            raise UserError("the classifier must be trained")
        self.out_of[lay.output] = y_tensor or lay.output
        skind = {"pw": "mm_fw", "linear": "mm_fw", "dw": "dw_fw", "conv": "conv_fw"}[kind]
        if lowered:
            kk = lay.kernel ** 2
            col = self.tensor(f"col:{lay.name}", "act", kk * lay.c_in, lay.h_out * lay.w_out, scope)
            im_outs = {"col": col, **({"xs": self.xs[lay.name]} if trained else {})}
            step.stages.append(Stage(f"{lay.name}.im2col", phase, "im2col", {"x": x}, im_outs,
                                     self.gather_attrs(lay, lay.c_in, k_in if trained else 0), scope, lay,
                                     ("the stored input channels",) if trained else ()))
            ins["x"] = col
            attrs = self.mm_view(attrs)
            skind = "mm_fw"
        step.stages.append(Stage(f"{lay.name}.{'frozen' if not trained else 'fw'}", phase, skind, ins, outs, attrs,
                                 scope, lay, tuple(fused)))

    @staticmethod
    def gather_attrs(lay: Layer, c: int, keep: int = 0) -> dict:
        return dict(c=c, h=lay.h_in, w=lay.w_in, h_out=lay.h_out, w_out=lay.w_out, k=lay.kernel, stride=lay.stride,
                    pad=tuple(lay.pad), keep=keep)

    @staticmethod
    def mm_view(a: dict) -> dict:
        """A convolution's attrs as the product over its im2col columns: K = k k C_in, rows = output pixels."""
        kk = a["k"] ** 2
        return {**a, "kind": "pw", "conv": True, "c_in": kk * a["c_in"], "h": a["h_out"], "w": a["w_out"], "k": 1,
                "stride": 1, "pad": (0, 0, 0, 0), "k_in": kk * a["k_in"]}

    @staticmethod
    def weight_shape(lay: Layer, kind: str) -> tuple[int, int]:
        """(cols, rows) of the weight tensor: pw/linear [C_out][C_in], conv [C_out][k k C_in], dw [k k][C]."""
        if kind == "dw":
            return lay.c_out, lay.kernel * lay.kernel
        if kind == "conv":
            return lay.kernel * lay.kernel * lay.c_in, lay.c_out
        return lay.c_in, lay.c_out

    def scale_fw(self, op: Op, trained: bool):
        scope = "chunk_t" if trained else "chunk_f"
        x, s = self.act(op.inputs[0], scope), self.act(op.inputs[1], scope)
        c, h, w = self.net.tensors[op.output]
        outs = {"y": self.act(op.output, scope)}
        self.step.stages.append(Stage(f"{op.name}.{'fw' if trained else 'frozen'}", "fw" if trained else "frozen",
                                      "scale_fw", {"x": x, "s": s}, outs, dict(c=c, hw=h * w), scope))
        self.step.notes.append(f"{op.name}: the squeeze-excite scale runs as a stage of its own: its gate needs the "
                               f"average of the whole map, so it cannot run in the producing layer's epilogue")

    # -- latents -----------------------------------------------------------------------------
    def latents(self):
        lat = [self.act(t, "batch") for t in self.step.cut.latent_tensors]
        if len(lat) != 1:
            raise UserError(f"the cut {self.step.cut.label} replays {len(lat)} tensors; the deployer replays one")
        t = self.step.tensors[lat[0]]
        self.tensor("replay", "replay", t.cols, t.rows, "none")  # one latent's rows; the buffer is in flash
        self.step.stages.append(Stage("latents", "latents", "latents", {"replay": "replay"}, {"latent": lat[0]},
                                      dict(cols=t.cols, rows=t.rows), "once"))

    # -- backward ----------------------------------------------------------------------------
    def backward(self):
        step = self.step
        grad: dict[str, str] = {}
        pending: dict[str, list[str]] = {}   # tensor -> gradient tensors still to add into its gradient
        last = self.net.layers[-1]
        grad[last.output] = "grad:logits"
        bw: list[Stage] = []
        for op in reversed(self.step.cut.trainable_ops):
            if op.kind == "dropout" or op.name in self.fused_ops:
                continue
            if op.kind == "se_scale":
                bw += self.scale_bw(op, grad)
                continue
            lay = op.layer
            kind = deploy_kind(lay)
            fw = step.stage(f"{lay.name}.fw")
            a = self.geom[lay.name]
            # the gradient of this layer's output
            if lay.name in self.pool_of and "y" not in fw.outs:
                g_pool = grad[self.pool_of[lay.name]]
                dy = self.tensor(f"grad:{lay.output}", "grad", a["k_out"], lay.h_out * lay.w_out, "chunk_t")
                bw.append(Stage(f"{lay.name}.pool_bw", "bw", "gap_bw", {"g": g_pool}, {"dy": dy},
                                dict(c=a["k_out"], hw=lay.h_out * lay.w_out), "chunk_t"))
                step.notes.append(f"{self.pool_of[lay.name]}: the average pool's backward (a broadcast of the pooled "
                                  f"gradient) runs as a stage of its own before {lay.name}'s backward")
            elif lay.name in self.pool_of:     # SE: the scale's direct gradient plus the pool path's
                dy = grad[lay.output]
                g_pool = grad[self.pool_of[lay.name]]
                bw.append(Stage(f"{lay.name}.pool_bw", "bw", "gap_bw", {"g": g_pool, "acc": dy}, {"dy": dy},
                                dict(c=a["k_out"], hw=lay.h_out * lay.w_out), "chunk_t"))
                step.notes.append(f"{self.pool_of[lay.name]}: the squeeze-excite pool's backward adds its broadcast "
                                  f"gradient to {lay.name}'s output gradient in a stage of its own")
            else:
                out = self.out_of.get(lay.output, lay.output)
                if out in grad:
                    dy = grad[out]
                elif pending.get(out):     # the skip operand of a residual add: the sum's gradient
                    dy = pending.pop(out)[0]
                else:
                    raise UserError(f"{lay.name}: no gradient reaches its output; the deployer trains layers whose "
                                    f"output leads to the loss")
            if a.get("residual"):
                skip = _canon(self.alias, op_input(self.net, a["residual"], 1))
                pending.setdefault(skip, []).append(dy)
            common = {"dy": dy}
            if lay.name in self.stash:
                common["stash"] = self.stash[lay.name][0]
            act_note = (f"{lay.act_after} backward ({lay.name})",) if lay.act_after != "none" else ()
            w, xs = f"w:{lay.name}", self.xs[lay.name]
            how = self.stash.get(lay.name, (None, None))[1]
            wg_outs = {"dw": self.tensor(f"dw:{lay.name}", "grad_w", *self.grad_shape(lay, kind, a), "none", lay.name)}
            if a["bias"]:
                wg_outs["db"] = self.tensor(f"db:{lay.name}", "grad_b", a["k_out"], 1, "none", lay.name)
            kk = lay.kernel ** 2
            wg_attrs = {**a, "stash_how": how}
            if kind == "conv":      # dW = dZ^T . im2col(xs): the columns of the stored input, then the product
                colx = self.tensor(f"colx:{lay.name}", "act", kk * a["k_in"], lay.h_out * lay.w_out, "chunk_t")
                bw.append(Stage(f"{lay.name}.wg_cols", "bw", "wg_cols", {"x": xs}, {"col": colx},
                                self.gather_attrs(lay, a["k_in"]), "chunk_t", lay))
                xs, wg_attrs = colx, {**self.mm_view(a), "stash_how": how}
            bw.append(Stage(f"{lay.name}.wg", "bw", f"{'mm' if kind != 'dw' else 'dw'}_wg", {**common, "xs": xs},
                            wg_outs, wg_attrs, "chunk_t", lay, act_note))
            if self.step.cut.needs_input_grad(lay):
                x = _canon(self.alias, lay.input)
                # other gradients of x: a residual skip, or another layer reading x (added in this epilogue)
                extra = pending.pop(x, []) + ([grad[x]] if x in grad else [])
                if len(extra) > 1:
                    raise UserError(f"{lay.name}: the gradient of {x} sums {len(extra) + 1} paths; the deployer adds "
                                    f"two in one stage")
                dx = self.tensor(f"grad:{x}" if x not in grad else f"grad:{x}@{lay.name}", "grad", a["k_in"],
                                 lay.h_in * lay.w_in, "chunk_t")
                ins = {**common, "w": w}
                fused = list(act_note)
                if extra:
                    ins["gskip"] = extra[0]
                    fused.append("residual add backward (skip gradient)" if x not in grad else
                                 f"the gradient of {x} from its other reader")
                ig_attrs = {**a, "stash_how": how}
                if kind == "conv":   # dX = gathered dZ . W^T: W transposed per tap, dZ gathered per input pixel
                    wt = self.tensor(f"wt:{lay.name}", "act", kk * a["k_out"], a["k_in"], "none")
                    dcol = self.tensor(f"dcol:{lay.name}", "grad", kk * a["k_out"], lay.h_in * lay.w_in, "chunk_t")
                    # the weights change at the update only: transposed once per step, in the first chunk
                    bw.append(Stage(f"{lay.name}.ig_wt", "bw", "ig_wt", {"w": w}, {"wt": wt},
                                    dict(c_in=lay.c_in, k_in=a["k_in"], k_out=a["k_out"], kk=kk), "once", lay))
                    bw.append(Stage(f"{lay.name}.ig_cols", "bw", "ig_cols", {"dy": dy}, {"col": dcol},
                                    self.gather_attrs(lay, a["k_out"]), "chunk_t", lay))
                    ins = {k: v for k, v in ins.items() if k != "stash"}
                    ins.update(dy=dcol, w=wt)
                    ig_attrs = {**a, "wt": True, "k_out": kk * a["k_out"], "h_out": lay.h_in, "w_out": lay.w_in,
                                "useful_macs": lay.h_out * lay.w_out * kk * a["k_in"] * a["k_out"]}
                bw.append(Stage(f"{lay.name}.ig", "bw", f"{'mm' if kind != 'dw' else 'dw'}_ig", ins, {"dx": dx},
                                ig_attrs, "chunk_t", lay, tuple(fused)))
                grad[x] = dx
        step.stages += self.fuse_act_backward(bw)

    def fuse_act_backward(self, bw: list[Stage]) -> list[Stage]:
        """A layer's activation backward runs once, in the epilogue of the stage that last writes its
        output gradient (the next layer's input gradient, the pool's broadcast), rather than in the
        prologues of both its weight and input gradients."""
        out = list(bw)
        for i, st in enumerate(out):
            if st.kind not in WG_KINDS or "stash" not in st.ins:
                continue
            lay = st.layer
            dy = st.ins["dy"]
            writer = max((j for j in range(i) if dy in out[j].outs.values()), default=None)
            if writer is None:
                continue
            w = out[writer]
            act = st.attrs["act"]
            slot = next(k for k, v in w.outs.items() if v == dy)
            out[writer] = Stage(w.name, w.phase, w.kind, {**w.ins, "stash_out": st.ins["stash"]}, w.outs,
                                {**w.attrs, "act_out": act, "act_out_slot": slot}, w.repeat, w.layer,
                                w.fused + (f"{act} backward ({lay.name})",))
            for j in range(i, len(out)):
                o = out[j]
                if o.layer is lay and o.kind in WG_KINDS + IG_KINDS and "stash" in o.ins:
                    ins = {k: v for k, v in o.ins.items() if k != "stash"}
                    out[j] = Stage(o.name, o.phase, o.kind, ins, o.outs, o.attrs, o.repeat, o.layer,
                                   tuple(f for f in o.fused if not f.endswith(f"backward ({lay.name})")))
        return out

    def scale_bw(self, op: Op, grad: dict) -> list[Stage]:
        x, s = _canon(self.alias, op.inputs[0]), _canon(self.alias, op.inputs[1])
        gy = grad[op.output]
        k = self.step.tensors[gy].cols
        c, h, w = self.net.tensors[op.output]
        producer = next(o.layer for o in self.net.ops if o.output == s)
        sx = self.se_x[op.name]
        gx = self.tensor(f"grad:{x}", "grad", k, h * w, "chunk_t")
        gs = self.tensor(f"grad:{s}", "grad", k, 1, "chunk_t")
        grad[x], grad[s] = gx, gs
        return [Stage(f"{op.name}.bw", "bw", "scale_bw", {"dy": gy, "s": self.stash[producer.name][0], "x": sx},
                      {"dx": gx, "ds": gs}, dict(c=k, hw=h * w), "chunk_t")]

    @staticmethod
    def grad_shape(lay: Layer, kind: str, a: dict) -> tuple[int, int]:
        """(cols, rows) of dW: dw [k k][k_in], conv [k_out][k k k_in] (per tap, the kept channels), else
        [k_out][k_in]."""
        if kind == "dw":
            return a["k_in"], lay.kernel * lay.kernel
        if kind == "conv":
            return lay.kernel * lay.kernel * a["k_in"], a["k_out"]
        return a["k_in"], a["k_out"]

    def update(self):
        for lay in self.step.cut.trainable_layers:
            a = self.geom[lay.name]
            ins = {"w": f"w:{lay.name}", "dw": f"dw:{lay.name}"}
            if a["bias"]:
                ins.update(b=f"b:{lay.name}", db=f"db:{lay.name}")
            self.step.stages.append(Stage(f"{lay.name}.update", "update", "sgd", ins, {},
                                          {**a, "lr": self.step.params.lr}, "once", lay))


def op_input(net, op_name: str, i: int) -> str:
    return next(op for op in net.ops if op.name == op_name).inputs[i]


def build_step(cut: Cut, p: float, params: CLParams, n_f: int = 1, n_t: int | None = None, n_f2: int = 0,
               split: int = 0) -> Step:
    """The training step of `cut` at partiality `p`, frozen chunks of n_f samples, tail chunks of n_t; with
    n_f2 and split, the frozen stages from the split on in chunks of n_f2 (a multiple of n_f dividing the
    new samples of a batch)."""
    kept_channels(p, 1)
    n_t = params.batch if n_t is None else n_t
    for what, n, top in (("frozen chunk", n_f, params.batch_new), ("tail chunk", n_t, params.batch)):
        if not 1 <= n <= top:
            raise UserError(f"{what} size must be 1..{top}, got {n}")
    if split and not (n_f < n_f2 <= params.batch_new and n_f2 % n_f == 0 and params.batch_new % n_f2 == 0):
        raise UserError(f"the frozen forward's second segment takes chunks of a multiple of {n_f} samples that "
                        f"divides {params.batch_new}, got {n_f2}")
    w = _Walk(cut, p, params, n_f, n_t)
    w.forward()
    w.latents()
    w.backward()
    w.update()
    for st in w.step.stages:
        if st.kind == "mm_wg" and st.attrs.get("conv") and "stash" in st.ins:
            raise UserError(f"{st.layer.name}: no stage writes its output gradient to run its activation's backward "
                            f"in; the deployer cannot train this convolution here")
    order = {"frozen": 0, "latents": 1, "fw": 2, "bw": 3, "update": 4}
    w.step.stages.sort(key=lambda s: order[s.phase])   # stable: program order kept within a phase
    if split:
        _split_frozen(w.step, n_f2, split)
    return w.step


def _split_frozen(step: Step, n_f2: int, split: int) -> None:
    """Runs the frozen stages from index `split` on in chunks of n_f2: they repeat in the loop "chunk_f2",
    and every per-chunk tensor they touch holds a chunk of n_f2 (those the first segment writes for them
    too: each of its chunks of n_f fills its share, Step.call_chunk)."""
    frozen = step.frozen_stages
    if not 0 < split < len(frozen):
        raise UserError(f"the frozen forward's second segment must start at one of its stages 1..{len(frozen) - 1}, "
                        f"got {split}")
    step.n_f2, step.split = n_f2, split
    deep = {id(s) for s in frozen[split:]}
    crossing = {t for s in frozen[split:] for t in s.tensors if step.tensors[t].scope == "chunk_f"}
    for t in crossing:
        step.tensors[t] = replace(step.tensors[t], scope="chunk_f2")
    step.stages = [replace(s, repeat="chunk_f2") if id(s) in deep else s for s in step.stages]
