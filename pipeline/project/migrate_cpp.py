"""Op registration rewrites in C++ bindings, for `migrate`.

PYBIND11_MODULE binds functions to Python only; kernel-builder needs Torch ops
registered under the build's namespace. Each `m.def("f", &f, ...)` becomes
`ops.def("f(<schema>)")` plus one `ops.impl` per backend, the schema derived
from f's C++ signature. Torch ops take double and int64_t where pybind11 took
float and int, so such a function gets a small adapter that casts and calls
it: the function itself, and every kernel it calls, is left as it is.
TORCH_LIBRARY(name, m) becomes TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, m).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PYBIND = re.compile(r"\bPYBIND11_MODULE\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\{")
_LIBRARY = re.compile(r"\b(STABLE_)?TORCH_LIBRARY(_IMPL)?(_EXPAND)?\s*\(\s*(\w+)\s*,")
_DEF = re.compile(r'^\s*(\w+)\s*\.\s*def\s*\(\s*"(\w+)"\s*,\s*&?\s*([\w:]+)\s*(?:,[^;]*)?\)\s*;\s*$')
_DISPATCH = {"cpu": ("CPU_KERNEL", "kCPU"), "cuda": ("CUDA_KERNEL", "kCUDA"), "rocm": ("ROCM_KERNEL", "kCUDA"),
             "metal": ("METAL_KERNEL", "kMPS"), "xpu": ("XPU_KERNEL", "kXPU")}
_INTS = {"int", "int32_t", "long", "int64_t", "size_t", "unsigned", "uint32_t", "int16_t", "longlong", "ssize_t"}


class Unmigratable(ValueError):
    """A construct `migrate` does not rewrite mechanically; the message says which."""


@dataclass(frozen=True)
class Param:
    ctype: str       # as written, without the name
    name: str
    schema: str      # "Tensor(a!)", "float", ...
    op_type: str     # the C++ type a Torch op takes ("double" for float)
    cast: str        # the original type to cast back to ("" when none is needed)


@dataclass(frozen=True)
class CppResult:
    text: str
    op_names: tuple[str, ...]         # the C++ ops now registered
    namespaces: tuple[str, ...]       # literal namespaces replaced (old torch.ops.<ns>)
    notes: tuple[str, ...]


def _norm(ctype: str) -> str:
    return re.sub(r"\s+", "", ctype.replace("const", " ").replace("&", "").replace("struct", ""))


def _tensor(base: str) -> bool:
    return base in ("torch::Tensor", "at::Tensor", "Tensor")


def param_of(raw: str, alias: list[str]) -> Param:
    raw = raw.split("=")[0].strip()
    m = re.match(r"^(.*?)([A-Za-z_]\w*)\s*$", raw)
    if not m or not m.group(1).strip():
        raise Unmigratable(f"parameter {raw!r} has no name")
    ctype, name = m.group(1).strip(), m.group(2)
    base = _norm(ctype).replace("unsignedint", "unsigned").replace("longlong", "longlong")
    mutable = "&" in ctype and "const" not in ctype
    if _tensor(base):
        if mutable:
            alias.append(chr(ord("a") + len(alias)))
            return Param(ctype, name, f"Tensor({alias[-1]}!)", ctype, "")
        return Param(ctype, name, "Tensor", ctype, "")
    if re.fullmatch(r"(std|c10)::optional<(torch|at)::Tensor>", base):
        return Param(ctype, name, "Tensor?", ctype, "")
    if base in ("float", "double"):
        return Param(ctype, name, "float", "double", "" if base == "double" else base)
    if base in _INTS:
        return Param(ctype, name, "int", "int64_t", "" if base == "int64_t" else base)
    if base == "bool":
        return Param(ctype, name, "bool", "bool", "")
    if base in ("std::string", "c10::string_view", "std::string_view"):
        return Param(ctype, name, "str", ctype, "")
    if base in ("at::ScalarType", "c10::ScalarType", "torch::ScalarType"):
        return Param(ctype, name, "ScalarType", ctype, "")
    raise Unmigratable(f"parameter type {ctype!r} of {name!r} has no mechanical Torch schema")


def _return(ret: str) -> tuple[str, str]:
    """(schema, C++ return type of the op) of a C++ return type."""
    base = _norm(ret)
    if base == "void":
        return "()", "void"
    if _tensor(base):
        return "Tensor", ret
    if m := re.fullmatch(r"std::tuple<(.*)>", base):
        parts = m.group(1).split(",")
        if all(_tensor(p) for p in parts):
            return "(" + ", ".join("Tensor" for _ in parts) + ")", ret
    if base in ("float", "double"):
        return "float", "double"
    if base in _INTS:
        return "int", "int64_t"
    if base == "bool":
        return "bool", "bool"
    raise Unmigratable(f"return type {ret!r} has no mechanical Torch schema")


def _split_params(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "<([" and 1 or (-1 if ch in ">)]" else 0)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return [p for p in parts if p.strip() and p.strip() != "void"]


def signature(code: str, func: str) -> tuple[str, list[str]]:
    """(return type, raw parameters) of the definition or declaration of `func` in `code`."""
    name = re.escape(func.split("::")[-1])
    m = re.search(rf"(?:^|[;}}\n])\s*((?:[\w:<>,]+[\s*&]+)+?){name}\s*\(([^()]*)\)\s*(?:const\s*)?[{{;]", code)
    if not m:
        raise Unmigratable(f"cannot find the definition of {func} in the binding")
    ret = re.sub(r"\b(static|inline|extern|constexpr)\b", "", m.group(1)).strip()
    return ret, _split_params(m.group(2))


def _block_end(text: str, open_brace: int) -> int:
    depth = 0
    for i in range(open_brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise Unmigratable("PYBIND11_MODULE block has no closing brace")


def _impl_lines(op: str, target: str, backends: tuple[str, ...]) -> list[str]:
    keys = [b for b in ("cpu", "cuda", "rocm", "metal", "xpu") if b in backends] or ["cuda"]
    if len(keys) == 1:
        return [f'  ops.impl("{op}", torch::{_DISPATCH[keys[0]][1]}, &{target});']
    lines, groups = [], {}
    for b in keys:  # rocm shares CUDA's dispatch key and branch
        groups.setdefault(_DISPATCH[b][1], []).append(_DISPATCH[b][0])
    for i, (key, macros) in enumerate(groups.items()):
        cond = " || ".join(f"defined({m})" for m in macros)
        lines += [f"#{'if' if i == 0 else 'elif'} {cond}", f'  ops.impl("{op}", torch::{key}, &{target});']
    return lines + ["#endif"]


def _adapter(func: str, ret_type: str, params: list[Param]) -> str:
    args = ", ".join(f"static_cast<{p.cast}>({p.name})" if p.cast else p.name for p in params)
    decl = ", ".join(f"{p.op_type} {p.name}" for p in params)
    body = f"return {func}({args});" if ret_type != "void" else f"{func}({args});"
    return (f"// Torch ops take double and int64_t: this adapter casts to {func}'s own parameter types.\n"
            f"static {ret_type} {func.split('::')[-1]}_op({decl}) {{\n  {body}\n}}\n")


def rewrite_pybind(text: str, backends: tuple[str, ...], context: str = "") -> tuple[str, list[str]]:
    """The PYBIND11_MODULE block replaced by TORCH_LIBRARY_EXPAND + REGISTER_EXTENSION; the ops it defines."""
    m = _PYBIND.search(text)
    if not m:
        return text, []
    end = _block_end(text, m.end() - 1)
    module = m.group(2)
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", text[m.end():end], flags=re.S)
    adapters, lines, ops = [], ["TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {"], []
    for statement in (s.strip() for s in body.split(";")):
        if not statement:
            continue
        d = _DEF.match(statement + ";")
        if not d or d.group(1) != module:
            raise Unmigratable(f"`{' '.join(statement.split())[:80]}` in PYBIND11_MODULE is not a plain "
                               f"{module}.def(\"name\", &function, ...)")
        op, func = d.group(2), d.group(3)
        ret, raw = signature(context + "\n" + text[:m.start()], func)
        alias: list[str] = []
        params = [param_of(p, alias) for p in raw]
        ret_schema, ret_type = _return(ret)
        schema = ", ".join(f"{p.schema} {p.name}" for p in params)
        target = func
        if any(p.cast for p in params) or ret_type != ret:
            adapters.append(_adapter(func, ret_type, params))
            target = f"{func.split('::')[-1]}_op"
        lines.append(f'  ops.def("{op}({schema}) -> {ret_schema}");')
        lines += _impl_lines(op, target, backends)
        ops.append(op)
    lines += ["}", "", "REGISTER_EXTENSION(TORCH_EXTENSION_NAME)"]
    replacement = "".join(a + "\n" for a in adapters) + "\n".join(lines)
    return text[:m.start()] + replacement + text[end + 1:], ops


def rewrite_library(text: str) -> tuple[str, list[str]]:
    """TORCH_LIBRARY[_IMPL](name, ...) → the _EXPAND form with TORCH_EXTENSION_NAME; the old names."""
    names: list[str] = []

    def fix(m: re.Match) -> str:
        stable, impl, _expand, ns = m.groups()
        if ns != "TORCH_EXTENSION_NAME":
            names.append(ns)
        return f"{stable or ''}TORCH_LIBRARY{impl or ''}_EXPAND(TORCH_EXTENSION_NAME,"

    return _LIBRARY.sub(fix, text), names


def _ensure_includes(text: str) -> str:
    if '"registration.h"' not in text:
        includes = list(re.finditer(r"^[ \t]*#[ \t]*include[^\n]*\n", text, re.M))
        at = includes[-1].end() if includes else 0
        text = text[:at] + '#include "registration.h"\n' + text[at:]
    if "<torch/extension.h>" in text and not re.search(r"\bpy::|pybind11", text):
        # torch/extension.h is torch/all.h plus pybind11, which no longer has a use here.
        text = text.replace("#include <torch/extension.h>", "#include <torch/all.h>\n#include <torch/library.h>")
    return text


def rewrite_binding(text: str, backends: tuple[str, ...], register_elsewhere: bool, context: str = "") -> CppResult:
    """Every mechanical registration rewrite of one C++ source (raises Unmigratable); `context`:
    other sources where the bound functions may be declared."""
    new, ops = rewrite_pybind(text, backends, context)
    new, namespaces = rewrite_library(new)
    if new == text:
        return CppResult(text, (), (), ())
    notes = []
    if ops:
        notes.append(f"PYBIND11_MODULE → TORCH_LIBRARY_EXPAND with {len(ops)} op(s): {', '.join(ops)}")
    if namespaces:
        notes.append(f"TORCH_LIBRARY({', '.join(sorted(set(namespaces)))}, ...) → TORCH_LIBRARY_EXPAND("
                     "TORCH_EXTENSION_NAME, ...)")
    if not register_elsewhere and "REGISTER_EXTENSION" not in new:
        new = new.rstrip("\n") + "\n\nREGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n"
    op_names = re.findall(r'ops\.def\s*\(\s*"(\w+)', new) + re.findall(r'\b\w+\.def\s*\(\s*"(\w+)\s*\(', new)
    return CppResult(_ensure_includes(new), tuple(dict.fromkeys(ops + op_names)), tuple(dict.fromkeys(namespaces)),
                     tuple(notes))
