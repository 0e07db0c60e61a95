"""Graphs with symbolic sizes: compiled once per concrete size, behind one callable.

Dynamo hands a backend a symbolic graph when a dimension is dynamic (a second size
seen, `mark_dynamic`, `torch.compile(dynamic=True)`), and keeps only that graph in
its cache: every later call of any size reaches it.  Running it eagerly would turn
compilation off for good, so `SizeSpecialized` specializes the graph to each call's
concrete sizes (its SymInt arguments and size arithmetic become constants), compiles
that static graph with the ordinary pipeline and keeps it under the call's sizes, strides and
integer arguments: a kernel is only ever run at the sizes it was built for.

Where the whole graph imports with symbolic sizes, it is imported and lowered to
linalg once (frontend/compile.py SymbolicRegion) and each size only binds its sizes
and runs the later stages; where it does not (an op that needs a static size, a
result that views an argument), each size's static graph is made from the FX graph
(`specialize`).  The import must not guard on a symbolic size: `no_new_guards`
turns any attempt into an error rather than let it pin the size it was traced at.

The sizes of Dynamo's outputs are expressions in its symbols (`s0*s1`, `s0//2`);
`bindings` reads the symbols' values off a call's arguments and `evaluate` computes
any expression from them.  A graph that keeps seeing new sizes stops compiling them
after `config.dynamic_sizes` and runs eagerly from then on, with a warning.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import sympy
import torch
import torch.fx as fx
import torch.fx.traceback as fx_traceback
from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily
from torch.fx.experimental import symbolic_shapes
from torch.fx.experimental.proxy_tensor import make_fx
from torch.multiprocessing.reductions import StorageWeakRef

from mlirc.config import config
from mlirc.dialects import layouts
from mlirc.errors import UnsupportedOpError
from mlirc.frontend.hot_sizes import HotSizeCall
from mlirc.frontend.stats import stats

log = logging.getLogger(__name__)

# A backed size's value at the traced call: torch 2.12 renamed it, and 2.11 (the GPU
# host's) warns that hint_int is deprecated for size_hint.
hint_int = next(
    getattr(symbolic_shapes, name)
    for name in ("guarding_hint_or_throw", "size_hint", "hint_int")
    if hasattr(symbolic_shapes, name)
)


def is_symbolic(example_inputs: Sequence[Any]) -> bool:
    """Whether any argument is a SymInt or a tensor with a symbolic size or stride."""
    for x in example_inputs:
        if isinstance(x, torch.SymInt):
            return True
        if isinstance(x, torch.Tensor) and not all(isinstance(d, int) for d in (*x.shape, *x.stride())):
            return True
    return False


def bindings(example_inputs: Sequence[Any], args: Sequence[Any]) -> dict[sympy.Symbol, int]:
    """The value of each of Dynamo's size symbols in a call with `args`: read off the
    SymInt arguments and the tensors' sizes and strides that are a bare symbol."""
    found: dict[sympy.Symbol, int] = {}

    def bind(symbolic: Any, value: int) -> None:
        if isinstance(symbolic, torch.SymInt) and isinstance(symbolic.node.expr, sympy.Symbol):
            found[symbolic.node.expr] = int(value)

    for example, arg in zip(example_inputs, args, strict=True):
        if isinstance(example, torch.Tensor) and isinstance(arg, torch.Tensor):
            for symbolic, value in zip((*example.shape, *example.stride()), (*arg.shape, *arg.stride()), strict=True):
                bind(symbolic, value)
        else:
            bind(example, arg)
    return found


def evaluate(size: int | torch.SymInt, symbols: dict[sympy.Symbol, int]) -> int:
    """A size Dynamo wrote as an expression in its symbols, at their values."""
    if isinstance(size, int):
        return size
    value = sympy.sympify(sympy.sympify(size.node.expr).xreplace(symbols))
    if not value.is_number:
        raise ValueError(f"size {size.node.expr} depends on symbols no argument binds: {value.free_symbols}")
    return int(value)


class SizeWouldSpecialize(UnsupportedOpError):
    """Importing needed a symbolic size's value (a guard on it)."""


def _shape_envs(example_inputs: Sequence[Any]) -> list:
    envs: dict[int, Any] = {}
    for x in example_inputs:
        sizes = [x] if isinstance(x, torch.SymInt) else []
        sizes += [*x.shape, *x.stride()] if isinstance(x, torch.Tensor) else []
        for size in sizes:
            if isinstance(size, torch.SymInt):
                envs[id(size.node.shape_env)] = size.node.shape_env
    return list(envs.values())


@contextlib.contextmanager
def no_new_guards(example_inputs: Sequence[Any]) -> Iterator[None]:
    """While active, a question about a symbolic size that its known ranges do not
    answer (`s0 == 4`, `int(s0)`) raises SizeWouldSpecialize instead of adding a
    guard and answering for the traced size."""
    envs = _shape_envs(example_inputs)
    if not envs:
        raise SizeWouldSpecialize("symbolic sizes", "no shape environment to watch")

    def refusing(env: Any) -> Callable:
        def evaluate_expr(expr: Any, *args: Any, **kwargs: Any) -> Any:
            known = env._maybe_evaluate_static(expr)
            if known is None:
                raise SizeWouldSpecialize(str(expr), "needs the value of a symbolic size")
            return known

        return evaluate_expr

    before = [env.__dict__.get("evaluate_expr") for env in envs]  # an enclosing no_new_guards'
    for env in envs:
        env.evaluate_expr = refusing(env)  # an instance attribute over the method
    try:
        yield
    finally:
        for env, previous in zip(envs, before, strict=True):
            if previous is None:
                del env.evaluate_expr
            else:
                env.evaluate_expr = previous


def returns_argument_views(gm: fx.GraphModule) -> bool:
    """Does a result share storage with an argument (a view of it)?"""
    storages = {
        StorageWeakRef(m.untyped_storage())
        for n in gm.graph.nodes
        if n.op == "placeholder" and isinstance(m := n.meta.get("val"), torch.Tensor)
    }
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    metas = [r.meta.get("val") for r in results if isinstance(r, fx.Node)]
    return any(isinstance(m, torch.Tensor) and StorageWeakRef(m.untyped_storage()) in storages for m in metas)


# Views at a storage offset of their own choosing, not their input's plus a constant
ABSOLUTE_OFFSET_VIEWS = frozenset({torch.ops.aten.as_strided.default})


def call_key(example_inputs: Sequence[Any], gm: fx.GraphModule | None = None) -> Callable[[Sequence[Any]], tuple]:
    """What a static compile depends on beyond Dynamo's guards, as a function of a
    call's arguments: the sizes and strides of the tensors whose layout is symbolic,
    and the value of every argument that is not a tensor (the SymInts).  Dynamo
    calls the graph only where its guards hold, and they fix the rest (dtypes,
    devices, static sizes and strides); keying on the symbolic parts alone keeps the
    per-call cost independent of the number of weights.  Where `gm` makes a view at
    an absolute storage offset (as_strided), the arguments' offsets count too: a
    result viewing an input is otherwise placed relative to it (`_input_views`)."""
    tensors = [i for i, x in enumerate(example_inputs) if isinstance(x, torch.Tensor)]
    symbolic = tuple(i for i in tensors if is_symbolic([example_inputs[i]]))
    values = tuple(i for i, x in enumerate(example_inputs) if not isinstance(x, torch.Tensor))
    absolute = gm is not None and any(n.target in ABSOLUTE_OFFSET_VIEWS for n in gm.graph.nodes)
    offsets = tuple(tensors) if absolute else ()

    # One generated expression: it runs on every call, where generators over the
    # positions cost a few microseconds (a third of a small graph's own overhead).
    parts = [f"a[{i}].shape, a[{i}].stride()" for i in symbolic]
    parts += [f"a[{i}]" for i in values]
    parts += [f"a[{i}].storage_offset()" for i in offsets]
    return eval(f"lambda a: ({', '.join(parts)},)" if parts else "lambda a: ()")  # noqa: S307 - positions only


def hinted_arguments(example_inputs: Sequence[Any]) -> list[Any]:
    """Arguments of the sizes Dynamo traced with (its hints): the first call's."""
    args: list[Any] = []
    for x in example_inputs:
        if isinstance(x, torch.SymInt):
            args.append(hint_int(x))
        elif isinstance(x, torch.Tensor):
            size = [hint_int(d) for d in x.shape]
            stride = [hint_int(d) for d in x.stride()]
            with unset_fake_temporarily():
                args.append(torch.empty_strided(size, stride, dtype=x.dtype, device=x.device))
        else:
            args.append(x)
    return args


def specialize(gm: fx.GraphModule, args: Sequence[Any]) -> tuple[fx.GraphModule, list]:
    """`gm` at the sizes of `args`: a static graph over its tensor arguments, its
    SymInt arguments folded in as the constants they are in this call; and, per
    result, None or where it views a tensor argument (`_input_views`).  The graph is
    AOTAutograd's, decomposed already: retracing keeps its ops, and each keeps its
    source's `original_aten` (`_keep_original_ops`)."""
    positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

    def static(*tensors: torch.Tensor) -> Any:
        full = list(args)
        for i, t in zip(positions, tensors, strict=True):
            full[i] = t
        return fx.Interpreter(gm).run(*full)

    # Its own fake mode with static shapes, out of Dynamo's tracing context: in
    # Dynamo's shape environment the inputs would get fresh symbols, which its guards
    # then cannot name
    with unset_fake_temporarily(), torch._guards.tracing(None):
        mode = FakeTensorMode()
        fakes = [mode.from_tensor(args[i], static_shapes=True) for i in positions]
        try:
            traced = _substituted(gm, args, fakes, mode)
        except Exception:  # noqa: BLE001 - what substitution cannot run, make_fx retraces
            log.debug("substituting sizes failed; retracing", exc_info=True)
            with mode, fx_traceback.preserve_node_meta():
                traced = make_fx(static)(*fakes)
            _keep_original_ops(gm, traced)
        views = _input_views(traced, fakes)
    traced.graph.eliminate_dead_code()  # the unused results of multi-result ops (pooling's indices)
    traced.recompile()
    return traced, views


def _substituted(
    gm: fx.GraphModule, args: Sequence[Any], fakes: list[torch.Tensor], mode: FakeTensorMode
) -> fx.GraphModule:
    """`gm` copied node by node at the sizes of `args`: every node that computes a
    size (sym_size, arithmetic on SymInts) is run and becomes the number it is here,
    every other node is copied with those numbers for arguments, its value (`val`)
    computed on `fakes`.  What make_fx's retrace gives (the fallback), in 40% of its
    time: BERT layer 0.08 against 0.18 s, resnet 0.06 against 0.15 s on 2 cores."""
    graph = fx.Graph()
    copies: dict[fx.Node, Any] = {}  # the new graph's node, or the number a size node is
    values: dict[fx.Node, Any] = {}  # what each node computes at these sizes
    inputs = iter(args)
    tensors = iter(fakes)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            arg = next(inputs)
            if isinstance(arg, torch.Tensor):
                values[node] = next(tensors)
                copies[node] = graph.placeholder(node.name)
                copies[node].meta["val"] = values[node]
            else:
                values[node] = copies[node] = arg
        elif node.op == "get_attr":
            copies[node] = graph.get_attr(node.target)
            values[node] = mode.from_tensor(getattr(gm, node.target), static_shapes=True)
            copies[node].meta["val"] = values[node]
        elif node.op == "call_function":
            with mode:
                value = node.target(*fx.map_arg(node.args, values.get), **fx.map_arg(node.kwargs, values.get))
            values[node] = value
            if _holds_tensor(value):
                copies[node] = graph.call_function(
                    node.target, fx.map_arg(node.args, copies.get), fx.map_arg(node.kwargs, copies.get)
                )
                copies[node].meta["val"] = value
                if "original_aten" in node.meta:
                    copies[node].meta["original_aten"] = node.meta["original_aten"]
            else:  # a size, a float or a flag at these sizes; None: an assertion, which held
                copies[node] = value
        elif node.op == "output":
            graph.output(fx.map_arg(node.args[0], copies.get))
        else:
            raise NotImplementedError(f"{node.op} node {node.name}")
    return fx.GraphModule(gm, graph)


def _holds_tensor(value: Any) -> bool:
    """A tensor, or a tuple or list with one (a multi-result op's); a torch.Size or a
    list of sizes is a constant at these sizes."""
    if isinstance(value, (tuple, list)):
        return any(_holds_tensor(v) for v in value)
    return isinstance(value, torch.Tensor)


def _keep_original_ops(source: fx.GraphModule, traced: fx.GraphModule) -> None:
    """`original_aten` is the op the user called, whose errors the runtime checks
    give: an index_add decomposed into index_put raises on index -1 where index_put
    wraps.  The retrace sets it to the traced op itself; the source node is found
    through `from_node`, which preserve_node_meta records."""
    sources = {n.name: n for n in source.graph.nodes}
    for node in traced.graph.nodes:
        for origin in reversed(node.meta.get("from_node") or []):
            same_graph = getattr(origin, "graph_id", id(source.graph)) == id(source.graph)
            found = sources.get(getattr(origin, "name", None)) if same_graph else None
            if found is not None and "original_aten" in found.meta:
                node.meta["original_aten"] = found.meta["original_aten"]
                break


def _input_views(gm: fx.GraphModule, fakes: list[torch.Tensor]) -> list:
    """Per result: (argument index, size, stride, storage offset from the argument's)
    where it is a view of a tensor argument, else None.  AOTAutograd rebuilds such a
    result from the argument with the compiled result's layout, read off the tensor
    when sizes are symbolic: a copy's offset 0 made every chunk() but the first the
    first one.  The offset is the argument's plus this, per call: the argument may
    itself start anywhere in its storage (a slice), whatever it did when compiled."""
    storages = [StorageWeakRef(f.untyped_storage()) for f in fakes]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    views: list = []
    for result in output.args[0]:
        val = result.meta.get("val") if isinstance(result, fx.Node) else None
        if not isinstance(val, torch.Tensor) or StorageWeakRef(val.untyped_storage()) not in storages:
            views.append(None)
            continue
        index = storages.index(StorageWeakRef(val.untyped_storage()))
        offset = val.storage_offset() - fakes[index].storage_offset()
        views.append((index, tuple(val.shape), val.stride(), offset))
    return views


def static_outputs(user_outputs: list | None, symbols: dict[sympy.Symbol, int]) -> list | None:
    """Dynamo's outputs (fake tensors of symbolic sizes and strides) at one call's
    sizes, as meta tensors: the strides the results must have (eager's)."""
    if user_outputs is None:
        return None
    outputs: list[Any] = []
    for out in user_outputs:
        if not isinstance(out, torch.Tensor):
            outputs.append(out)
            continue
        size = [evaluate(d, symbols) for d in out.shape]
        stride = [evaluate(d, symbols) for d in out.stride()]
        outputs.append(torch.empty_strided(size, stride, dtype=out.dtype, device="meta"))
    return outputs


StaticCompiler = Callable[[fx.GraphModule, list, "list | None"], Callable]


class SymbolicCompiler(Protocol):
    """A graph imported once with its symbolic sizes (frontend/compile.py SymbolicRegion)."""

    def sizes(self, args: list) -> tuple[int, ...]: ...

    def compile_at(self, sizes: tuple[int, ...], eager: list, hot: bool = False) -> Callable: ...

    def every_size(self, eager: Callable[[], list]) -> tuple[Callable, Callable[..., bool]] | None: ...


class SizeSpecialized:
    """A symbolic graph's callable: a static compile per concrete call signature."""

    def __init__(
        self, gm: fx.GraphModule, example_inputs: Sequence[Any], compile_static: StaticCompiler, user_outputs: list | None,
        failed: Callable[[Exception], Callable], symbolic: Callable[[], SymbolicCompiler] | None = None,
    ) -> None:  # fmt: skip
        self.failed = failed  # what runs a size whose graph could not be made static (eagerly)
        self.make_symbolic = symbolic
        self.symbolic: SymbolicCompiler | None | bool = None  # False: the graph does not import symbolically
        self.gm = gm
        self.example_inputs = list(example_inputs)
        self.compile_static = compile_static
        self.user_outputs = user_outputs
        self.compiled: dict[tuple, Callable] = {}
        self.own_sizes = 0  # sizes compiled on their own (MLIRC_DYNAMIC_SIZES caps them)
        self.key = call_key(example_inputs, gm)
        self.warned = False

    def prepare(self, args: Sequence[Any]) -> Callable:
        """The static compile for `args`' signature (compiled now if new)."""
        key = self.key(args)
        fn = self.compiled.get(key)
        if fn is not None:
            return fn
        fn = self._every_size(args)
        if fn is not None:
            self.compiled[key] = fn
            return fn
        if self.own_sizes >= config.dynamic_sizes:
            if not self.warned:
                self.warned = True
                warnings.warn(
                    f"mlirc: a graph with symbolic sizes has been compiled at {self.own_sizes} sizes "
                    f"(MLIRC_DYNAMIC_SIZES); new sizes run eagerly",
                    stacklevel=3,
                )
            return lambda *a: self.gm(*a)
        self.own_sizes += 1
        fn = self._bound(args)
        if fn is not None:
            self.compiled[key] = fn
            return fn
        try:
            symbols = bindings(self.example_inputs, args)
            static, views = specialize(self.gm, args)
            outputs = static_outputs(self.user_outputs, symbols)
        except Exception as err:  # noqa: BLE001 - no internal error reaches the user
            fn = self.compiled[key] = self.failed(err)
            return fn
        log.debug("compiling a symbolic graph at %s", key)
        positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        tensors = [args[i] for i in positions]
        constants = _take_constant_outputs(static)
        if outputs is not None and len(outputs) == len(constants):
            outputs = [out for out, constant in zip(outputs, constants, strict=True) if constant is None]
        else:  # the graph returns more than Dynamo's outputs (a batch norm's updated statistics)
            outputs = None
        compiled = self.compile_static(static, tensors, outputs)
        fn = self.compiled[key] = _tensors_only(compiled, len(args), positions, constants, views)
        return fn

    def __call__(self, *args: Any) -> Any:
        fn = self.compiled.get(self.key(args))
        return (fn or self.prepare(args))(*args)

    def _imported(self, args: Sequence[Any]) -> SymbolicCompiler | None:
        """The graph imported once with symbolic sizes, where it imported so and the
        arguments of symbolic layout are row-major, as the import took them (the
        others' layouts are static: Dynamo's guards keep them)."""
        if self.symbolic is None:
            self.symbolic = self._import_symbolic() or False
        tensors = [i for i, x in enumerate(self.example_inputs) if isinstance(x, torch.Tensor)]
        symbolic_layout = [i for i in tensors if is_symbolic([self.example_inputs[i]])]
        if not self.symbolic or any(layouts.plan(args[i].shape, args[i].stride()) for i in symbolic_layout):
            return None
        return self.symbolic  # type: ignore[return-value]

    def _every_size(self, args: Sequence[Any]) -> Callable | None:
        """The symbolic graph's one wrapper for every size, where it has one and the
        sizes of `args` hold its size assertions: no compile for this size.  A size
        called often is compiled on its own too, while MLIRC_DYNAMIC_SIZES allows,
        and kept where faster (frontend/hot_sizes.py)."""
        symbolic = self._imported(args) if config.dynamic_sizes else None
        every = symbolic.every_size(self._eager_symbolic) if symbolic is not None else None
        if every is None:
            return None
        call, fits = every
        try:
            if not fits(*args):
                return None
        except Exception:  # noqa: BLE001 - sizes its arithmetic cannot take (a 0 divisor): bound instead
            log.debug("the wrapper for every size does not take these sizes", exc_info=True)
            return None
        stats().symbolic_unbound_sizes += 1
        return HotSizeCall(call, self._own_size)

    def _own_size(self, args: tuple) -> Callable:
        """A hot size compiled on its own (a wrapper bound to its sizes)."""
        if self.own_sizes >= config.dynamic_sizes:
            raise UnsupportedOpError("symbolic sizes", "MLIRC_DYNAMIC_SIZES sizes compiled on their own already")
        self.own_sizes += 1
        fn = self._bound(args, hot=True)
        if fn is None:
            raise UnsupportedOpError("symbolic sizes", "this size does not bind")
        stats().symbolic_hot_binds += 1
        return fn

    def _eager_symbolic(self) -> list:
        """(shape, strides) of each result as SymInts: Dynamo's outputs' where the
        graph returns them one for one, else the graph's own (as _eager_results)."""
        output = next(n for n in self.gm.graph.nodes if n.op == "output")
        results = list(output.args[0]) if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
        metas = [r.meta["val"] for r in results if r is not None]
        own = [(tuple(m.shape), tuple(m.stride())) for m in metas]
        user = self.user_outputs
        if user is None or len(user) != len(own):
            return own

        def same(u: Any, m: Any) -> bool:
            return (
                isinstance(u, torch.Tensor) and u.dtype == m.dtype and u.dim() == m.dim()
                and all(_expr(a) == _expr(b) for a, b in zip(u.shape, m.shape, strict=True))
            )  # fmt: skip

        if not all(same(u, m) for u, m in zip(user, metas, strict=True)):
            return own
        return [(tuple(u.shape), tuple(u.stride())) for u in user]

    def _bound(self, args: Sequence[Any], hot: bool = False) -> Callable | None:
        """The graph imported once with symbolic sizes, compiled at the sizes of `args`;
        None where it did not import so, or these arguments are not row-major.  `hot`:
        the size is hot already, its own kernels come at its next call."""
        symbolic = self._imported(args)
        if symbolic is None:
            return None
        tensors = [i for i, x in enumerate(self.example_inputs) if isinstance(x, torch.Tensor)]
        try:
            compiled = symbolic.compile_at(symbolic.sizes(list(args)), self._eager_results(args), hot)
        except Exception:  # noqa: BLE001 - the FX graph's specialization is the fallback
            # Counted for tests: a shortfall of the symbolic path, or a stage that fails at any size.
            stats().symbolic_bind_failures += 1
            log.debug("compiling the symbolic import failed; specializing the FX graph", exc_info=True)
            return None
        output = next(n for n in self.gm.graph.nodes if n.op == "output")
        count = len(output.args[0]) if isinstance(output.args[0], (tuple, list)) else 1
        return _tensors_only(compiled, len(args), tensors, [None] * count, [None] * count)

    def _import_symbolic(self) -> SymbolicCompiler | None:
        if self.make_symbolic is None or returns_argument_views(self.gm):
            return None
        try:
            with no_new_guards(self.example_inputs):
                return self.make_symbolic()
        except Exception:  # noqa: BLE001 - the FX graph's specialization is the fallback
            log.debug("the graph does not import with symbolic sizes", exc_info=True)
            return None

    def _eager_results(self, args: Sequence[Any]) -> list:
        """(shape, strides) of each result at the sizes of `args`: Dynamo's outputs'
        where the graph returns them one for one (frontend/backend._keep_user_strides),
        else the graph's own."""
        symbols = bindings(self.example_inputs, args)
        output = next(n for n in self.gm.graph.nodes if n.op == "output")
        results = list(output.args[0]) if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
        metas = [r.meta["val"] for r in results if r is not None]
        own = [
            (tuple(evaluate(d, symbols) for d in m.shape), tuple(evaluate(d, symbols) for d in m.stride()))
            for m in metas
        ]
        user = static_outputs(self.user_outputs, symbols)
        if user is None or len(user) != len(own):
            return own
        if any(
            not isinstance(u, torch.Tensor) or tuple(u.shape) != o[0] or u.dtype != m.dtype
            for u, o, m in zip(user, own, metas, strict=True)
        ):
            return own
        return [(tuple(u.shape), tuple(u.stride())) for u in user]


def _expr(size: Any) -> Any:
    return size.node.expr if isinstance(size, torch.SymInt) else size


def _take_constant_outputs(gm: fx.GraphModule) -> list:
    """Results that are constants at these sizes (a size Dynamo returns: `x.shape[0] * 3`)
    leave the graph: per result, None where the graph still returns it, else
    ("constant", value)."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = list(output.args[0])
    constants = [None if isinstance(r, fx.Node) else ("constant", r) for r in results]
    if any(constants):
        output.args = (tuple(r for r in results if isinstance(r, fx.Node)),)
        gm.recompile()
    return constants


def _tensors_only(fn: Callable, arity: int, positions: list[int], constants: list, views: list) -> Callable:
    """`fn` over a call's tensor arguments (at `positions` of `arity`), with the
    constant results put back and the views of arguments made as views of them."""
    if not any(constants) and not any(views):  # the common case, at little per-call cost
        if positions == list(range(arity)):
            return fn
        if len(positions) > 1:
            pick = operator.itemgetter(*positions)
            return lambda *args: fn(*pick(args))
    viewed = [(i, view) for i, view in enumerate(views) if view is not None]

    def call(*args: Any) -> Any:
        tensors = [args[i] for i in positions]
        results = iter(fn(*tensors))
        out = [next(results) if constant is None else constant[1] for constant in constants]
        for i, (index, size, stride, offset) in viewed:
            out[i] = tensors[index].as_strided(size, stride, tensors[index].storage_offset() + offset)
        return tuple(out)

    return call
