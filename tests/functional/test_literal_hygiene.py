"""Every text the interface hands to Textual goes through the one literal path (issue 23 item 4;
docs/security.md, "The screen").

Textual reads a `str` given to a Static, a Label, a button's, switch's, selection's or option's
label, a tree node, a table column or a border title as content markup: `[/x]` raises, `[b]`
styles, `[@click=app.quit]` makes a click quit. Text from outside must never reach one as a str.
This reads the source of `app/ui` and holds every such argument to one of:

- a call into `app/ui/text.py` (the path: `literal`, `styled`, `literal_text`, `matched`),
- a call of a function declared to return `Content` or `Text` (never a `str`): our own helpers that
  assemble styled lines from literal pieces,
- a name only ever bound to one of these in its function (or annotated `Content` / `Text`),
- a string constant that reads the same as markup (an empty label, `" · "`).

A translated constant goes through `literal` too: a translation is text we did not type. Every app
class derives from `LiteralApp`, whose `notify` shows message and title literally (a screen's or a
widget's `notify` ends there), and no call in `app/ui` asks for markup or parses it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.content import Content

import app.ui

UI = Path(app.ui.__file__).parent
PATH_MODULE = UI / "text.py"

WIDGETS = {
    "Static", "Label", "Button", "Checkbox", "RadioButton", "Selection", "Option", "Collapsible", "Tooltip",
    "Tab", "TabPane", "Tree", "Hit", "DiscoveryHit",
}  # fmt: skip
"""Textual's classes whose first argument (or text keyword) it reads as markup when it is a str."""
TEXT_POSITION = {"Hit": 1}
"""Where the text is when it is not the first argument (a palette hit's score comes first)."""
TEXT_KEYWORDS = {"content", "renderable", "label", "prompt", "title", "display", "help"}
METHODS = {"update", "add_leaf", "set_label", "add_column", "add_row", "add_option", "add_options", "set_options"}
"""Methods whose positional arguments Textual reads as markup when they are str."""
NOT_WIDGETS = {
    "model": "a TrajectoryModel's update(view)",
    "reply_text": "the model's answer, shown as Markdown by design (printable first, docs/decisions.md)",
}
"""Receivers of `.update(…)` that are not a Static: what each one is."""
ATTRIBUTES = {"label", "tooltip", "border_title", "border_subtitle", "title", "sub_title", "placeholder"}
"""Attributes Textual reads as markup when given a str (a text area's placeholder too; an input's
is shown as typed, but holds to the same rule)."""
CONTENT_TYPES = {"Content", "Text"}


def sources() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(UI.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def is_content_type(annotation: ast.expr | None) -> bool:
    """`Content`, `Text`, or a container of them (`list[Text]`), and no `str` anywhere in it."""
    if annotation is None:
        return False
    names = {node.id for node in ast.walk(annotation) if isinstance(node, ast.Name)}
    return bool(names & CONTENT_TYPES) and not names & {"str", "object", "Any"}


def callee(call: ast.Call) -> str | None:
    match call.func:
        case ast.Name(id=name) | ast.Attribute(attr=name):
            return name
    return None


def literal_path() -> set[str]:
    """The functions of `app/ui/text.py` that make something to show."""
    tree = ast.parse(PATH_MODULE.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and is_content_type(node.returns)}


def typed_helpers() -> set[str]:
    """Names whose every definition in `app/ui` is declared to return Content or Text."""
    returns: dict[str, list[bool]] = defaultdict(list)
    for _path, tree in sources():
        for function in functions(tree):
            returns[function.name].append(is_content_type(function.returns))
    return {name for name, kinds in returns.items() if all(kinds)}


def widget_classes() -> tuple[set[str], set[str]]:
    """The classes of `app/ui` that derive from one of `WIDGETS` (a Static subclass…), and those of
    them that take their text as the base does (no `__init__` of their own)."""
    classes = {
        node.name: node
        for _path, tree in sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }
    derived: set[str] = set()
    while True:
        more = {
            name
            for name, node in classes.items()
            if name not in derived and any(_base_name(base) in WIDGETS | derived for base in node.bases)
        }
        if not more:
            break
        derived |= more
    same_text = {
        name
        for name in derived
        if not any(isinstance(item, ast.FunctionDef) and item.name == "__init__" for item in classes[name].body)
    }
    return derived, same_text


def _base_name(base: ast.expr) -> str:
    return ast.unparse(base).split("[")[0].rsplit(".", 1)[-1]


def markup_free(text: str) -> bool:
    try:
        return Content.from_markup(text).plain == text and not Content.from_markup(text).spans
    except Exception:
        return False


@dataclass
class Checker:
    path: Path
    allowed_calls: set[str]
    problems: list[str]
    widgets: tuple[set[str], set[str]] = (set(), set())
    """`widget_classes()`: ours that are widgets, and those of them taking their base's text."""

    def check(self, tree: ast.Module) -> None:
        scopes = {id(node): function for function in functions(tree) for node in ast.walk(function)}
        owners = {
            id(node): owner.name
            for owner in ast.walk(tree)
            if isinstance(owner, ast.ClassDef)
            for node in ast.walk(owner)
        }
        derived, same_text = self.widgets
        for node in ast.walk(tree):
            scope = scopes.get(id(node))
            if isinstance(node, ast.Call):
                if _is_super_init(node) and owners.get(id(node)) in derived:
                    self._text_arguments(node, scope, "super().__init__", 0)
                elif callee(node) in same_text:
                    self._text_arguments(node, scope, f"{callee(node)}", 0)
                else:
                    self._call(node, scope)
            elif isinstance(node, ast.FunctionDef) and node.name == "render" and owners.get(id(node)) in derived:
                if not is_content_type(node.returns):
                    self._problem(node, "render() must return Content or Text: a str is read as markup")
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and target.attr in ATTRIBUTES:
                        self._require(node.value, scope, f".{target.attr} =")

    def _call(self, call: ast.Call, scope: ast.AST | None) -> None:
        name = callee(call)
        if name in ("from_markup", "from_ansi"):
            self._problem(call, f"{name}(): parses text as markup")
        for keyword in call.keywords:
            if keyword.arg == "markup" and self.path != PATH_MODULE:
                self._problem(call, "markup=: every text is literal")
        if name in WIDGETS:
            self._text_arguments(call, scope, name, TEXT_POSITION.get(name, 0))
        elif name in METHODS and not (name == "update" and _receiver(call) in NOT_WIDGETS):
            for argument in call.args:
                self._require(argument, scope, f".{name}(…)")
        elif name == "add" and any(keyword.arg == "data" for keyword in call.keywords):  # a tree node
            self._require(call.args[0], scope, ".add(…)")

    def _text_arguments(self, call: ast.Call, scope: ast.AST | None, name: str, position: int) -> None:
        for argument in call.args[position : position + 1]:
            self._require(argument, scope, f"{name}(…)")
        for keyword in call.keywords:
            if keyword.arg in TEXT_KEYWORDS:
                self._require(keyword.value, scope, f"{name}({keyword.arg}=…)")

    def _require(self, value: ast.expr, scope: ast.AST | None, where: str) -> None:
        if not self._literal(value, scope, depth=0):
            self._problem(value, f"{where} is given {ast.unparse(value)!r}")

    def _literal(self, value: ast.expr, scope: ast.AST | None, depth: int) -> bool:
        match value:
            case ast.Constant(value=None):
                return True
            case ast.Constant(value=str(text)):
                return markup_free(text)
            case ast.Call(func=ast.Attribute(value=ast.Name(id=constructor))) if constructor in CONTENT_TYPES:
                return False  # `Content.styled(raw)`, `Text.assemble(raw)`: not through `printable`
            case ast.Call():
                return callee(value) in self.allowed_calls | WIDGETS  # a widget's text is checked at its call
            case ast.IfExp(body=body, orelse=orelse):
                return self._literal(body, scope, depth) and self._literal(orelse, scope, depth)
            case ast.BoolOp(values=values):
                return all(self._literal(each, scope, depth) for each in values)
            case ast.Starred(value=inner):
                return self._literal(inner, scope, depth)
            case ast.GeneratorExp(elt=inner) | ast.ListComp(elt=inner):
                return self._literal(inner, scope, depth)
            case ast.List(elts=items) | ast.Tuple(elts=items):
                return all(self._literal(item, scope, depth) for item in items)
            case ast.Name(id=name) if scope is not None and depth < 5:
                bound = list(_bindings(scope, name))
                return bool(bound) and all(
                    self._literal(each, scope, depth + 1) if isinstance(each, ast.expr) else each for each in bound
                )
        return False

    def _problem(self, node: ast.AST, text: str) -> None:
        self.problems.append(f"{self.path.relative_to(UI.parent.parent)}:{getattr(node, 'lineno', '?')}: {text}")


def _is_super_init(call: ast.Call) -> bool:
    match call.func:
        case ast.Attribute(attr="__init__", value=ast.Call(func=ast.Name(id="super"))):
            return True
    return False


def _receiver(call: ast.Call) -> str | None:
    match call.func:
        case ast.Attribute(value=ast.Name(id=name) | ast.Attribute(attr=name)):
            return name
    return None


def _bindings(scope: ast.AST, name: str) -> Iterator[ast.expr | bool]:
    """What `name` is bound to in its function: each value assigned, or True for a parameter or an
    assignment annotated Content/Text, False for a binding this check cannot follow."""
    assert isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))
    arguments = scope.args
    for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        if argument.arg == name:
            yield is_content_type(argument.annotation)
    for node in ast.walk(scope):
        match node:
            case ast.Assign(targets=targets, value=value):
                for target in targets:
                    if isinstance(target, ast.Name) and target.id == name:
                        yield value
                    elif _binds(target, name):
                        yield False
            case ast.AnnAssign(target=ast.Name(id=bound), annotation=annotation) if bound == name:
                yield is_content_type(annotation)
            case ast.For(target=target) | ast.comprehension(target=target) | ast.withitem(optional_vars=target):
                if target is not None and _binds(target, name):
                    yield False
            case ast.NamedExpr(target=ast.Name(id=bound)) if bound == name:
                yield False


def _binds(target: ast.expr, name: str) -> bool:
    return any(isinstance(inner, ast.Name) and inner.id == name for inner in ast.walk(target))


def test_every_text_given_to_a_widget_goes_through_the_literal_path() -> None:
    allowed = literal_path() | typed_helpers()
    assert {"literal", "styled", "literal_text"} <= allowed
    widgets = widget_classes()
    assert {"ErrorNode", "SourceSwitch", "TrajectoryTree"} <= widgets[0] and "SourceSwitch" in widgets[1]
    problems: list[str] = []
    for path, tree in sources():
        Checker(path, allowed, problems, widgets).check(tree)
    assert not problems, "text shown without the literal path (app/ui/text.py):\n" + "\n".join(problems)


def test_every_app_shows_its_notifications_literally() -> None:
    apps = []
    for path, tree in sources():
        for node in ast.walk(tree) if path != PATH_MODULE else ():
            if isinstance(node, ast.ClassDef):
                if "App" in {_base_name(base) for base in node.bases}:
                    apps.append(f"{path.name}: {node.name}")
    assert not apps, f"derive from app.ui.text.LiteralApp, not App: {apps}"


def problems_in(source: str) -> list[str]:
    problems: list[str] = []
    tree = ast.parse(source)
    Checker(UI / "example.py", literal_path() | typed_helpers(), problems, ({"Node"}, set())).check(tree)
    return problems


SHOWN = "def shown(name, message, text, label, widget, reason, parent, entry, model, view):\n    {}\n"


@pytest.mark.parametrize(
    "source",
    [
        SHOWN.format('Static(f"{name}")'),
        SHOWN.format("Static(_('Tools'))"),
        SHOWN.format("Static(Content(text))"),
        SHOWN.format("label.update(message)"),
        SHOWN.format("label.update(Content.styled(message, 'bold'))"),
        SHOWN.format("node.set_label(name.upper())"),
        SHOWN.format("self.notify(text, markup=True)"),
        SHOWN.format("Content.from_markup(text)"),
        SHOWN.format("widget.tooltip = reason"),
        SHOWN.format("parent.add(label, data=entry)"),
        SHOWN.format("Static('[b]bold[/b]')"),
        "class Node(Static):\n    def __init__(self, text):\n        super().__init__(text)\n",
        "class Node(Static):\n    def render(self) -> str:\n        return self.text\n",
    ],
)
def test_the_check_catches_text_outside_the_path(source: str) -> None:
    """The check itself: each of these would show a str as markup (or parse markup)."""
    assert problems_in(source)


@pytest.mark.parametrize(
    "source",
    [
        SHOWN.format("Static(literal(name))"),
        SHOWN.format("Static(literal(_('Tools')), id='title')"),
        SHOWN.format("label.update(styled(message, 'bold'))"),
        SHOWN.format("content = literal(text)\n    widget.update(content)"),
        SHOWN.format("Static('')"),
        SHOWN.format("model.update(view)"),
        "class Node(Static):\n    def __init__(self, text):\n        super().__init__(literal(text))\n",
    ],
)
def test_the_check_lets_the_path_through(source: str) -> None:
    assert not problems_in(source)
