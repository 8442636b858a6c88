"""The architecture's rules, read from the source with `ast` (no TensorFlow, well under a second):

(a) no function in tati/engine/ over 80 lines;
(b) no signature over 8 parameters (self and cls aside) in tati/ besides the option-taking
    constructors listed in WIDE;
(c) no import cycle among tati's modules, module-level and function-local imports counted,
    and the TF-free modules (TF_FREE) import no TensorFlow, directly or through what they import;
(d) no sampler's or optimizer's name (any spelling the registry knows) as a string literal that
    code compares or matches (==, in, a dict's key) outside its own module, the registry and the
    original TATi's spellings (config/original.py);
(e) no isinstance, hasattr or getattr in tati/engine/ whose subject is a kernel: the engine asks
    the kernel's spec (tati/engine/registry.py) or a hook its base class declares.

The allow-lists below may only shrink: each entry says why it stays.
"""

import ast
import pathlib

import pytest

import tati
from tati.engine import registry

PACKAGE = pathlib.Path(tati.__file__).parent
MAX_LINES, MAX_PARAMETERS = 80, 8

# (b) Constructors that take a kernel's options, one keyword each (the option table's names, so
# that Simulation(**options) and the CLI pass them through): module path, function -> why.
WIDE = {
    "tati/samplers/sghmc.py:SGHMC.__init__": "SGHMC's options (friction, mass, its noise estimators)",
    "tati/samplers/hmc.py:HamiltonianMonteCarlo.__init__": "HMC's options (leg time, adaptation, metric)",
    "tati/samplers/proposal.py:ProposalKernel.__init__": "NUTS' and RWMH's options (adaptation, metric)",
    "tati/samplers/ccadl.py:CCAdL.__init__": "CCAdL's options (friction, sigma, sigmaA, mass)",
    "tati/models/mlp.py:MLP.__init__": "the network's options (dimensions, activations, loss, dtype, walkers)",
    "tati/analysis/diffusion_map.py:diffusion_map": "tati-analyse's diffusion-map options, one keyword each",
}
# (c) Modules that must import without TensorFlow (options are checked before it starts).
TF_FREE = ("tati.engine.contract", "tati.engine.registry", "tati.config.option_kinds", "tati.config.options",
           "tati.config.preflight", "tati.errors", "tati.recording.columns", "tati.adaptation.width_rules",
           "tati.analysis.temperature", "tati.bayes.calibration")
# (d) module -> why its literals name a sampler (beside its own module and the registry).
NAMING = {
    "tati.config.original": "the original TATi's spellings of samplers and options (doc/migration.md)",
}


def sources():
    """(module name, path relative to the repository, parsed tree) of every module of tati."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield module, path.relative_to(PACKAGE.parent).as_posix(), ast.parse(path.read_text(), str(path))


SOURCES = list(sources())
MODULES = {module for module, _, _ in SOURCES}
PACKAGES = {module for module, path, _ in SOURCES if path.endswith("__init__.py")}


def functions(tree):
    """(qualified name, node) of every function and method, nested ones included."""
    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield prefix + child.name, child
                yield from visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, prefix + child.name + ".")
            else:
                yield from visit(child, prefix)
    yield from visit(tree, "")


def test_engine_functions_are_short():
    """(a) No function in tati/engine/ over 80 lines."""
    found = [(f"{path}:{name}", node) for _, path, tree in SOURCES if path.startswith("tati/engine/")
             for name, node in functions(tree)]
    assert len(found) > 50
    long = {name: node.end_lineno - node.lineno + 1 for name, node in found
            if node.end_lineno - node.lineno + 1 > MAX_LINES}
    assert long == {}


def parameters(node):
    """A function's named parameters, self and cls aside (*args and **kwargs not counted)."""
    named = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    return [a.arg for a in named if a.arg not in ("self", "cls")]


def test_signatures_have_few_parameters():
    """(b) No signature over 8 parameters outside the option-taking constructors of WIDE."""
    wide = {f"{path}:{name}": len(parameters(node)) for _, path, tree in SOURCES for name, node in functions(tree)
            if len(parameters(node)) > MAX_PARAMETERS}
    assert {name: n for name, n in wide.items() if name not in WIDE} == {}
    assert set(WIDE) <= set(wide), "an allowed wide signature is narrow now: take it off WIDE"


def imported(module, tree, local=True):
    """The tati modules and the top-level packages that `module` imports (module level, and
    inside functions where `local`): `from a.b import c` imports a.b.c where that is a module,
    else a.b. The packages above an imported module run first but are not its imports."""
    package = module if module in PACKAGES else module.rpartition(".")[0]
    nodes = ast.walk(tree) if local else [n for n in tree.body] + [
        n for top in tree.body if isinstance(top, (ast.If, ast.Try)) for n in ast.walk(top)]
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return found


def graph(local=True):
    return {module: {m for m in imported(module, tree, local) if m in MODULES and m != module}
            for module, _, tree in SOURCES}


def cycle(edges):
    """One import cycle as a list of modules, or None (depth-first search)."""
    state, path = {}, []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for after in sorted(edges.get(node, ())):
            if state.get(after) == "open":
                return path[path.index(after):] + [after]
            if after not in state:
                found = visit(after)
                if found:
                    return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycles():
    """(c) No cycle among tati's modules, function-local imports counted: a function-local
    import hides a cycle from Python, not from the design."""
    edges = graph(local=True)
    assert sum(map(len, edges.values())) > 100
    assert cycle(edges) is None


def test_tf_free_modules_import_no_tensorflow():
    """(c) What the option checks import runs without TensorFlow: the TF-free modules, what they
    import at module level (and the packages above each, whose __init__ runs first)."""
    edges, packages = graph(local=False), {module: imported(module, tree, False) for module, _, tree in SOURCES}

    def above(module):
        parts = module.split(".")
        return {".".join(parts[:k]) for k in range(1, len(parts))}

    for start in TF_FREE:
        seen, todo = set(), [start]
        while todo:
            module = todo.pop()
            if module in seen:
                continue
            seen.add(module)
            outside = {name.split(".")[0] for name in packages[module] if not name.startswith("tati")}
            assert not outside & {"tensorflow", "tensorflow_probability", "keras"}, (start, module)
            todo.extend(edges[module] | (above(module) & MODULES))


def registered_names():
    """Every spelling of every registered kernel (lower case) -> the module of its class."""
    return {spelling.lower(): spec.kernel.partition(":")[0] for spec in registry.specs()
            for spelling in spec.spellings}


def compared_literals(tree):
    """String literals that code compares or matches: operands of ==, !=, in, not in (and the
    elements of a tuple, list or set operand), dict keys and match-case values."""
    for node in ast.walk(tree):
        candidates = []
        if isinstance(node, ast.Compare):
            for operand in [node.left] + node.comparators:
                candidates += operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
        elif isinstance(node, ast.Dict):
            candidates = [key for key in node.keys if key is not None]
        elif isinstance(node, ast.MatchValue):
            candidates = [node.value]
        for candidate in candidates:
            if isinstance(candidate, ast.Constant) and isinstance(candidate.value, str):
                yield candidate


def test_no_sampler_names_outside_their_modules():
    """(d) Code branches on a spec's facts, not on a sampler's name."""
    names = registered_names()
    assert {"sgld", "baoab", "nuts", "l-bfgs"} <= set(names)
    found = []
    for module, path, tree in SOURCES:
        if module in NAMING or module == registry.__name__:
            continue
        for literal in compared_literals(tree):
            owner = names.get(literal.value.lower())
            if owner is not None and owner != module:
                found.append(f"{path}:{literal.lineno}: '{literal.value}'")
    assert found == []


KERNEL_WORDS = ("kernel", "optimizer", "sampler")


def names_a_kernel(node):
    """Whether an expression reads as a kernel: a name or attribute called kernel, optimizer or
    sampler (loop.kernel, self.optimizer, ...), or type(...) of one."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" and node.args:
        return names_a_kernel(node.args[0])
    word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return word.lstrip("_") in KERNEL_WORDS


def kernel_classes():
    """The class names of the registered kernels and of the bases and driver kernels they share."""
    return {spec.kernel.partition(":")[2] for spec in registry.specs()} | {
        "SamplerBase", "ProposalKernel", "HamiltonianMonteCarlo", "Kernel"}


def test_engine_probes_no_kernel():
    """(e) No isinstance, hasattr or getattr in tati/engine/ on a kernel or against a kernel class."""
    classes, found = kernel_classes(), []
    for _, path, tree in SOURCES:
        if not path.startswith("tati/engine/"):
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("isinstance", "hasattr", "getattr", "issubclass") and node.args):
                continue
            against = node.args[1] if node.func.id in ("isinstance", "issubclass") and len(node.args) > 1 else None
            against = against.elts if isinstance(against, ast.Tuple) else [against] if against is not None else []
            if names_a_kernel(node.args[0]) or any(
                    isinstance(a, (ast.Name, ast.Attribute)) and getattr(a, "id", getattr(a, "attr", "")) in classes
                    for a in against):
                found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


@pytest.mark.parametrize("source, expected", [
    ("if sampler == 'BAOAB': pass", ["'BAOAB'"]),
    ("x = name in ('nuts', 'rwmh')", ["'nuts'", "'rwmh'"]),
    ("table = {'SGLD': 1}", ["'SGLD'"]),
    ("print('BAOAB')", []),
])
def test_the_name_rule_sees_compares_tuples_and_keys(source, expected):
    """The checker of (d) finds what it is meant to find (and not a name in a call's argument)."""
    names = registered_names()
    literals = [repr(node.value) for node in compared_literals(ast.parse(source)) if node.value.lower() in names]
    assert literals == expected


def test_the_probe_rule_sees_kernels():
    """The checker of (e) finds a probe of a kernel and leaves other subjects alone."""
    tree = ast.parse("hasattr(optimizer, 'x'); getattr(self.loop.kernel, 'y', 0); isinstance(v, SamplerBase);"
                     "getattr(loop.data, 'full', True)")
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    kernels = [names_a_kernel(call.args[0]) for call in calls]
    assert kernels == [True, True, False, False]


def test_the_cycle_finder_finds_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
