"""The planners' shortcuts choose what the plain searches choose.

Planning a sweep and generating its stage programs take their time in a few searches, which skip
work they can prove useless: lifetimes walk a stage's positions at once, choose_step stops at the
frozen chunk it picks, plan_of files the chosen plan under its chunks for the stage jobs, the tile
searches skip choices that cannot be the cheapest. Each test here holds one of them to the plain
search it replaces, over stages of both networks."""
from __future__ import annotations

import pytest

from harness import platform as platmod
from harness.deploy import codegen, memplan, runner
from harness.deploy import program as progmod
from harness.deploy.codegen import FORK_CYCLES, WG_PACK_CYCLES, Gen, _balanced, _cands, _row_cands, r4
from harness.deploy.graph import build_step
from harness.errors import UserError
from harness.kernels.spec import cp
from harness.nets import build_network, cut_at_layer_id
from harness.schedule import cl_params
from tests.conftest import needs_clang

POINTS = [("phinet", "cifar10", 2, 0.7), ("phinet", "core50", 5, 1.0), ("mobilenetv2", "cifar10", 4, 0.8),
          ("mobilenetv2", "core50", 1, 0.6)]


def _cut(net, dataset, layer_id):
    return cut_at_layer_id(build_network(net, dataset), layer_id)


def _positional_lifetimes(step):
    """Lifetimes as the sequence's positions meet the tensors, one position at a time."""
    seq = step.sequence()
    n = len(seq)
    spans = {}
    for i, (st, chunk) in enumerate(seq):
        for t in st.tensors:
            scope = step.tensors[t].scope
            key = (t, chunk if scope in ("chunk_f", "chunk_f2", "chunk_t") and st.repeat == scope else -1)
            if scope == "chunk_f2" and st.repeat == "chunk_f":   # a first-segment chunk fills its share
                key = (t, chunk // (step.n_f2 // step.n_f))
            iv = spans.setdefault(key, [i, i])
            iv[1] = i
    life = {}
    for (t, _), (lo, hi) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        life.setdefault(t, []).append((lo, hi))
    return memplan.role_lifetimes(step, life, n)    # what the roles add is not what this test is about


@pytest.mark.parametrize("net,dataset,layer_id,p", POINTS)
@pytest.mark.parametrize("n_f,n_t,n_f2", [(1, 16, 0), (4, 2, 0), (12, 1, 0), (1, 16, 4), (2, 4, 6)])
def test_lifetimes_equal_the_positional_walk(net, dataset, layer_id, p, n_f, n_t, n_f2):
    cut = _cut(net, dataset, layer_id)
    split = len(build_step(cut, p, cl_params(dataset), n_f=n_f, n_t=n_t).frozen_stages) // 2 if n_f2 else 0
    step = build_step(cut, p, cl_params(dataset), n_f=n_f, n_t=n_t, n_f2=n_f2, split=split)
    got, want = memplan.lifetimes(step), _positional_lifetimes(step)
    assert got == want
    assert list(got) == list(want)     # the same order too (what the plan's rows list)


def _homes(plan):
    return [(n, h.memory, h.offset, h.nbytes, h.first, h.last) for n, h in plan.homes.items()], plan.arena


@pytest.mark.parametrize("net,dataset,layer_id,p", POINTS)
@pytest.mark.parametrize("placement", ["fit", "method"])
def test_choose_step_equals_trying_every_chunk(net, dataset, layer_id, p, placement):
    """choose_step against planning every chunk size (the largest tail chunk whose activations stay in
    L2, then among all frozen chunks that fit, the largest that keeps the frozen weights out of flash)."""
    cut, params, plat = _cut(net, dataset, layer_id), cl_params(dataset), platmod.load("paper")

    def fits(n_f, n_t):
        step = build_step(cut, p, params, n_f=n_f, n_t=n_t)
        try:
            plan = memplan.plan_step(step, plat, placement)
        except UserError:
            return None
        return None if any(step.tensors[h.tensor].role in ("act", "grad", "latent") for h in plan.external
                           if h.tensor in step.tensors) else plan

    def divisors(n):
        return [d for d in range(n, 0, -1) if n % d == 0]
    best_t = next((n for n in divisors(params.batch) if fits(1, n)), 1)
    plans = [pl for pl in (fits(n_f, best_t) for n_f in divisors(params.batch_new)) if pl is not None]
    in_flash = [any(h.memory == "flash" and pl.step.tensors.get(h.tensor) is not None
                    and pl.step.tensors[h.tensor].role in ("weight", "bias") for h in pl.external) for pl in plans]
    want = (next((pl for pl, f in zip(plans, in_flash) if not f), plans[0]) if placement == "fit" else plans[0]) \
        if plans else memplan.plan_step(build_step(cut, p, params, n_f=1, n_t=best_t), plat, placement)
    if plans:
        want = _second_segment_plainly(want, cut, p, params, plat, placement, fits)
    memplan._SECOND.clear()   # the search remembers its choice per frozen forward: made afresh here
    got = memplan.choose_step(cut, p, params, plat, placement)
    assert (got.step.n_f, got.step.n_t, got.step.n_f2, got.step.split) == \
        (want.step.n_f, want.step.n_t, want.step.n_f2, want.step.split)
    assert _homes(got) == _homes(want)
    again = memplan.choose_step(cut, p, params, plat, placement)     # from what it remembered
    assert _homes(again) == _homes(want)


def _second_segment_plainly(base, cut, p, params, plat, placement, fits):
    """The frozen forward's second segment by trying every candidate: every larger chunk from every stage
    where one tensor crosses, the best-scored one that fits (no spilled activations, no frozen weights
    moved to flash that base kept in L2, the slabs no smaller than the largest streamed tensors of a later
    stage need, as far as base had them)."""
    step = base.step
    frozen, new = step.frozen_stages, params.batch_new

    def in_flash(pl):
        return any(h.memory == "flash" and pl.step.tensors.get(h.tensor) is not None
                   and pl.step.tensors[h.tensor].role in ("weight", "bias") for h in pl.external)

    def ext_bytes(st):
        return sum(step.tensors[t].nbytes(step) if step.tensors[t].scope != "none"
                   else step.tensors[t].rows * step.tensors[t].pitch * 2
                   for t in st.tensors if t in base.homes and base.home(t).memory != "l2")
    floor = min(base.scratch_size, max((ext_bytes(st) for st in step.stages if st.phase not in ("frozen", "latents")),
                                       default=0))
    best, best_key = base, None
    for n_f2 in range(step.n_f + 1, new + 1):
        if new % n_f2 or n_f2 % step.n_f:
            continue
        for i in range(1, len(frozen)):
            made = {t for st in frozen[:i] for t in st.outs.values()}
            crossing = {t for st in frozen[i:] for t in st.ins.values()
                        if t in made and step.tensors[t].scope == "chunk_f"}
            if len(crossing) != 1:
                continue
            score = sum(st.sample_macs() for st in frozen[i:]) * (1 - step.n_f / n_f2)
            if score <= 0 or (best_key is not None and (score, n_f2, i) <= best_key):
                continue
            st2 = build_step(cut, p, params, n_f=step.n_f, n_t=step.n_t, n_f2=n_f2, split=i)
            try:
                pl = memplan.plan_step(st2, plat, placement)
            except UserError:
                continue
            if any(st2.tensors[h.tensor].role in ("act", "grad", "latent") for h in pl.external if h.tensor in st2.tensors):
                continue
            if (placement == "fit" and not in_flash(base) and in_flash(pl)) or pl.scratch_size < floor:
                continue
            best, best_key = pl, (score, n_f2, i)
    return best


def test_a_stage_job_finds_the_plan_its_point_chose(plans_as_planned):
    """A stage job asks for its plan by its chunks: it gets the plan its point chose (the same object:
    a forked worker inherits it), equal to the plan made for those chunks from nothing."""
    pt = runner.Point("phinet", "cifar10", 3, 0.8, "paper")
    runner.plan_of.cache_clear()
    try:
        chosen, jobs = runner.stage_jobs(pt)
        assert all(runner.plan_of(pt, j.n_f, j.n_t, j.n_f2, j.split) is chosen for j in jobs)
        runner.plan_of.cache_clear()
        st = chosen.step
        fresh = runner.plan_of(pt, st.n_f, st.n_t, st.n_f2, st.split)    # planned for the chunks alone
        assert fresh is not chosen and _homes(fresh) == _homes(chosen)
        assert [runner.content(fresh, st, "") for st in fresh.step.stages] == \
            [runner.content(chosen, st, "") for st in chosen.step.stages]
    finally:
        runner.plan_of.cache_clear()


def _wg_reference(gen, st, accumulate):
    """The weight gradient's tiles by the plain search: every (tk, tn, tm), the cheapest that fits."""
    a = st.attrs
    m, n, p = a["k_out"], a["k_in"], gen.samples(st) * a["h_out"] * a["w_out"]
    names = gen.wg_names(st, accumulate)
    act_bw, bias = "Stash" in names, "Db" in names
    found = []
    for resident in (True, False):
        t, _, ext = gen.wg_streams(st, names, accumulate, resident)
        best = None
        for tk in _cands(p, 2):
            for tn in _cands(n, 4):
                for tm in _balanced(m, 4):
                    k2 = (tk + 1) // 2
                    b = tk * cp(tm) * 2 * (2 if act_bw else 1) + r4(tm) * k2 * 4 + tk * cp(tn) * 2 + r4(tn) * k2 * 4
                    b += r4(tm) * cp(tn) * 2 + (tm * cp(tn) * 2 if accumulate else 0)
                    b += 4 * tm * tn if tk < p else 0
                    b += 4 * m + cp(m) * 2 if bias else 0
                    if b + 12 * 16 > gen.budget or not (("dw" not in ext or tm * t.dw.pitch * 2 <= t.dw.sb)
                                                        and ("Db" not in ext or t.Db.pitch * 2 <= t.Db.sb)):
                        continue
                    mt, nt, kt = -(-m // tm), -(-n // tn), -(-p // tk)
                    compute = mt * nt * kt * (-(-(-(-tm // 4) * -(-tn // 4)) // gen.cores)) * (30 + 24 * k2)
                    a_loads = mt * kt if kt == 1 else mt * nt * kt
                    b_loads = (nt * kt * (mt if nt > 1 else 1)) if kt == 1 else mt * nt * kt
                    l2 = (a_loads * tk * cp(tm) + b_loads * tk * cp(tn)) * 2 / gen.l2_bw
                    ext_cyc = (a_loads * tk * t.a.pitch * 2 / t.a.bw if t.a.xt else 0) \
                        + (b_loads * tk * t.xs.pitch * 2 / t.xs.bw if t.xs.xt else 0)
                    ext_cyc += a_loads * tk * t.Stash.pitch * 2 / t.Stash.bw if t.Stash and t.Stash.xt else 0
                    ext_cyc += 2 * m * t.dw.pitch * 2 / t.dw.bw if t.dw.xt else 0
                    pack = (a_loads * tk * cp(tm) + b_loads * tk * cp(tn)) * WG_PACK_CYCLES / gen.cores
                    c = compute + l2 + pack + ext_cyc + mt * nt * (kt * 2 + (2 if kt > 1 else 0)) * FORK_CYCLES
                    if best is None or c < best[0]:
                        best = (c, tm, tn, tk)
        if best is not None:
            found.append((best[0] + gen.whole_cycles(t), *best[1:]))
    return min(found, key=lambda f: f[0])[1:] if found else None


def _stages(kinds):
    for net, dataset, layer_id, p in POINTS:
        plan = runner.plan_of(runner.Point(net, dataset, layer_id, p, "paper"))
        for st in plan.step.stages:
            if st.kind in kinds:
                yield plan, st


def test_weight_gradient_tiles_are_the_cheapest_that_fit(plans_as_planned):
    checked = 0
    for plan, st in _stages(("mm_wg",)):
        for variant in progmod.variants(plan.step, st):
            local = runner.local_plan(plan, st, variant)
            gen = Gen(local, plan.platform)
            ctx = gen.wg(st, "st0", variant == "acc")
            assert (ctx["tm"], ctx["tn"], ctx["tk"]) == _wg_reference(Gen(local, plan.platform), st, variant == "acc"), \
                f"{st.name} {variant}"
            checked += 1
    assert checked > 20


def test_sliced_product_tiles_are_the_cheapest_that_fit(monkeypatch, plans_as_planned):
    """The sliced product's search asks whether a choice fits only when it would win: every search of
    the products of the points gives what asking it of every choice gives."""
    searched = []
    fast = Gen._mm_ksplit

    def both(self, m, n, kdim, fw, pool, ce, t, ext, slab, puts, rows_ps, mem, epi):
        best = None
        for tk in _cands(kdim, 16):
            for tn in _cands(n, 4):
                for tm in _row_cands(m, rows_ps if pool else 0):
                    if (ce and tn != n) or (pool and tm < m and tm % rows_ps and rows_ps % tm):
                        continue
                    if mem(tm, tn, tk) > self.budget or not all(tm * t[k].pitch * 2 <= slab for k in puts if k in ext):
                        continue
                    mt, nt, kt = -(-m // tm), -(-n // tn), -(-kdim // tk)
                    blocks = -(-(-(-tm // 4) * -(-tn // 4)) // self.cores)
                    compute = mt * nt * blocks * (90 * kt + 12 * (kdim + kt))
                    a_b = mt * nt * tm * (kt * t.a.pitch if t.a.xt else kdim + kt) * 2
                    w_b = mt * nt * tn * (kt * t.w.pitch if t.w.xt else kdim + kt) * 2 if fw \
                        else mt * nt * kdim * (t.w.pitch if t.w.xt else cp(tn)) * 2
                    cost = max(compute, a_b / t.a.bw + w_b / t.w.bw + epi(mt, nt, tm, tn)) + mt * nt * kt * 3 * FORK_CYCLES
                    cost += (mt * nt * kt * Gen.waited_bytes(t.a, tm) / t.a.bw_ext if t.a.xt else 0.0) \
                        + (mt * nt * kt * Gen.waited_bytes(t.w, tn) / t.w.bw_ext if fw and t.w.xt else 0)
                    if best is None or cost < best[0]:
                        best = (cost, tm, tn, tk)
        got = fast(self, m, n, kdim, fw, pool, ce, t, ext, slab, puts, rows_ps, mem, epi)
        assert got == best
        searched.append(got)
        return got

    monkeypatch.setattr(Gen, "_mm_ksplit", both)
    for plan, st in _stages(("mm_fw", "mm_ig")):
        Gen(runner.local_plan(plan, st, ""), plan.platform).mm(st, "st0")
    assert len(searched) > 20 and any(s is not None for s in searched)


def test_product_tiles_are_the_cheapest_that_fit(monkeypatch, plans_as_planned):
    """The product's tile search estimates a choice only when its compute and forks could beat the best so
    far: every product of the points gets the tiles, order and estimate that estimating every choice gives."""
    checked = 0
    for plan, st in _stages(("mm_fw", "mm_ig")):
        got = {}
        for bounds in (True, False):
            monkeypatch.setattr(codegen, "SEARCH_BOUNDS", bounds)
            for wide in (False, True):
                for whole in (True, False):
                    ctx = Gen(runner.local_plan(plan, st, ""), plan.platform)._mm(st, "st0", wide, whole)
                    got.setdefault((wide, whole), []).append((ctx.tm, ctx.tn, ctx.tk, ctx.ksplit, ctx.get("order"),
                                                              ctx.est))
        for key, (fast, plain) in got.items():
            assert fast == plain, f"{st.name} wide/whole {key}"
        checked += 1
    assert checked > 20


@needs_clang
def test_warm_compiles_every_stage_template():
    codegen._env.cache_clear()
    runner.StageJob.warm("paper")
    names = {p.name for p in codegen.TEMPLATES.glob("*.j2")}
    assert names and names <= {tpl.name for tpl in codegen._env().cache.values()}
