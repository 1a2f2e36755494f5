"""Scope resolution: which declaration each identifier use refers to.

A walk over the syntax tree keeps a stack of scopes (a class body, a method or function, a
block, a ``for``, a ``catch``, a lambda) and declares each variable where the language does:
locals from their declarator on (so a use before an inner declaration still reaches the outer
variable, and an inner declaration of the same name shadows it), parameters for their
function's body, and (Java) every field of a class body for the whole body, ``this.x``
included. An identifier that is not a variable reference (a method name, a field accessed on
another object, a label, an annotation, a package) is not resolved, nor is one no declaration
in the program matches (a library class, an inherited field, a C macro): those are
``external``. A declaration is *renamable* when it is a local or parameter, or a Java private
field never accessed as ``other.x``; C globals and macros are not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node, Tree

from mcu_exp.counterfactual.parsing import IDENTIFIER, text

# nodes that open a scope
SCOPES = {
    "java": frozenset(
        {
            "class_body",
            "interface_body",
            "enum_body",
            "method_declaration",
            "constructor_declaration",
            "lambda_expression",
            "block",
            "constructor_body",
            "for_statement",
            "enhanced_for_statement",
            "catch_clause",
            "try_with_resources_statement",
            "switch_block",
            "switch_block_statement_group",
            "switch_rule",
        }
    ),
    "c": frozenset({"function_definition", "compound_statement", "for_statement"}),
}
# (parent type, field) of an identifier that is not a variable reference
JAVA_NOT_REFERENCES = frozenset(
    {
        ("method_invocation", "name"),
        ("method_declaration", "name"),
        ("constructor_declaration", "name"),
        ("class_declaration", "name"),
        ("interface_declaration", "name"),
        ("enum_declaration", "name"),
        ("record_declaration", "name"),
        ("annotation_type_declaration", "name"),
        ("annotation_type_element_declaration", "name"),
        ("enum_constant", "name"),
        ("element_value_pair", "key"),
        ("marker_annotation", "name"),
        ("annotation", "name"),
    }
)
JAVA_NOT_REFERENCE_PARENTS = frozenset(
    {
        "scoped_identifier",
        "package_declaration",
        "import_declaration",
        "labeled_statement",
        "break_statement",
        "continue_statement",
        "module_declaration",
    }
)
JAVA_PARAMETER_PARENTS = frozenset(
    {"formal_parameter", "catch_formal_parameter", "enhanced_for_statement", "resource", "instanceof_expression"}
)
C_DECLARATOR_PARENTS = frozenset(
    {
        "declaration",
        "init_declarator",
        "pointer_declarator",
        "array_declarator",
        "parenthesized_declarator",
        "parameter_declaration",
        "function_declarator",
        "attributed_declarator",
    }
)
C_NOT_REFERENCE_PARENTS = frozenset({"preproc_def", "preproc_function_def", "preproc_params", "preproc_ifdef"})


@dataclass(frozen=True)
class Declaration:
    """A declared variable: its name, the byte offset of its name, its scope, whether renamable."""

    name: str
    start: int
    scope: int
    renamable: bool


@dataclass
class Resolution:
    """Every declaration in a program, and each resolved identifier's declaration.

    ``binding`` maps the byte offset of an identifier token (a use or the declaration's own
    name) to the index of its declaration in ``declarations``; identifiers absent from it
    are external.
    """

    declarations: list[Declaration] = field(default_factory=list)
    binding: dict[int, int] = field(default_factory=dict)

    def uses(self, decl: int) -> list[int]:
        """The byte offsets of every token bound to declaration ``decl`` (its name included)."""
        return sorted(start for start, d in self.binding.items() if d == decl)


class _Walker:
    def __init__(self, language: str, foreign_fields: set[str]) -> None:
        self.language = language
        self.foreign_fields = foreign_fields
        self.result = Resolution()
        self.scopes: list[tuple[int, dict[str, int]]] = []
        self.fields: list[dict[str, int]] = []  # each enclosing Java class body's fields
        self.next_scope = 0

    def declare(self, node: Node, renamable: bool) -> None:
        index = len(self.result.declarations)
        scope_id, names = self.scopes[-1]
        self.result.declarations.append(Declaration(text(node), node.start_byte, scope_id, renamable))
        names[text(node)] = index
        self.result.binding[node.start_byte] = index

    def lookup(self, node: Node) -> None:
        name = text(node)
        for _, names in reversed(self.scopes):
            if name in names:
                self.result.binding[node.start_byte] = names[name]
                return

    def push(self) -> None:
        self.scopes.append((self.next_scope, {}))
        self.next_scope += 1

    def visit(self, node: Node) -> None:
        opens = node.type in SCOPES[self.language] or self._prototype(node)
        if opens:
            self.push()
        if node.type == "class_body" or node.type == "enum_body" or node.type == "interface_body":
            self._declare_fields(node)
        for i, child in enumerate(node.children):
            if child.type == IDENTIFIER:
                self.identifier(child, node, node.field_name_for_child(i))
            else:
                self.visit(child)
        if node.type in ("class_body", "enum_body", "interface_body"):
            self.fields.pop()
        if opens:
            self.scopes.pop()

    def _prototype(self, node: Node) -> bool:
        """A C function declarator outside a definition: its parameters' own scope."""
        return (
            self.language == "c"
            and node.type == "function_declarator"
            and (node.parent is None or node.parent.type != "function_definition")
        )

    def _declare_fields(self, body: Node) -> None:
        fields: dict[str, int] = {}
        self.fields.append(fields)
        for member in body.named_children:
            if member.type != "field_declaration":
                continue
            modifiers = next((c for c in member.children if c.type == "modifiers"), None)
            private = modifiers is not None and any(c.type == "private" for c in modifiers.children)
            for declarator in member.children_by_field_name("declarator"):
                name = declarator.child_by_field_name("name")
                if name is not None:
                    self.declare(name, private and text(name) not in self.foreign_fields)
                    fields[text(name)] = self.result.binding[name.start_byte]

    def identifier(self, node: Node, parent: Node, field_name: str | None) -> None:
        if self.language == "java":
            self._java_identifier(node, parent, field_name)
        else:
            self._c_identifier(node, parent, field_name)

    def _java_identifier(self, node: Node, parent: Node, field_name: str | None) -> None:
        kind = parent.type
        if (kind, field_name) in JAVA_NOT_REFERENCES or kind in JAVA_NOT_REFERENCE_PARENTS:
            return
        if kind == "method_reference" and parent.named_children[0] != node:
            return
        if kind == "field_access" and field_name == "field":
            obj = parent.child_by_field_name("object")
            if obj is not None and obj.type == "this" and self.fields and text(node) in self.fields[-1]:
                self.result.binding[node.start_byte] = self.fields[-1][text(node)]
            return
        if kind == "variable_declarator" and field_name == "name":
            if parent.parent is not None and parent.parent.type == "field_declaration":
                return  # declared with its class body
            self.declare(node, renamable=True)
        elif _java_parameter(kind, field_name):
            self.declare(node, renamable=not _record_component(parent))
        else:
            self.lookup(node)

    def _c_identifier(self, node: Node, parent: Node, field_name: str | None) -> None:
        if parent.type in C_NOT_REFERENCE_PARENTS:
            return
        if parent.type in C_DECLARATOR_PARENTS and field_name == "declarator":
            top, via_function = parent, parent.type == "function_declarator"
            while top.parent is not None and top.parent.type in C_DECLARATOR_PARENTS:
                if top.parent.type == "function_declarator" and top.parent.child_by_field_name("declarator") == top:
                    via_function = True
                top = top.parent
            if via_function:
                return  # a function's name
            local = len(self.scopes) > 1
            self.declare(node, renamable=local)
            return
        self.lookup(node)

    def run(self, root: Node) -> Resolution:
        self.push()
        self.visit(root)
        return self.result


def _java_parameter(kind: str, field_name: str | None) -> bool:
    """Whether an identifier under ``kind`` (as ``field_name``) declares a parameter-like variable."""
    return (
        (field_name == "name" and kind in JAVA_PARAMETER_PARENTS)
        or kind in ("inferred_parameters", "formal_parameter", "spread_parameter")
        or (kind == "lambda_expression" and field_name == "parameters")
    )


def _record_component(parameter: Node) -> bool:
    """Whether a formal parameter is a record's component (a public accessor: not renamed)."""
    owner = parameter.parent.parent if parameter.parent is not None else None
    return owner is not None and owner.type == "record_declaration"


def foreign_fields(root: Node) -> set[str]:
    """Names accessed as a field of something other than ``this`` (Java ``other.x``)."""
    found: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "field_access":
            obj, name = node.child_by_field_name("object"), node.child_by_field_name("field")
            if name is not None and (obj is None or obj.type != "this"):
                found.add(text(name))
        stack.extend(node.children)
    return found


def resolve(tree: Tree, language: str) -> Resolution:
    """The declarations of the program and the declaration each identifier refers to."""
    fields = foreign_fields(tree.root_node) if language == "java" else set()
    return _Walker(language, fields).run(tree.root_node)
