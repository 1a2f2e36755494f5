"""The four counterfactual edits on Java and C snippets: parse, tokens and references kept."""

from __future__ import annotations

import pytest

from mcu_exp.counterfactual import EDITS, apply_edit, check_edit
from mcu_exp.counterfactual.names import apply_renames, bindings_kept
from mcu_exp.counterfactual.parsing import code_tokens, parse, syntax_errors, tokens
from mcu_exp.counterfactual.scopes import resolve

JAVA = """\
import java.util.List;
import java.util.Map;

/** Counts items; mentions count in Javadoc. */
public class Counter<T extends Comparable<T>> {
    private int count; // the count
    private final Map<String, List<T>> index = new java.util.HashMap<>();
    public int total;

    public int add(T item, int v1) {
        /* block: count */
        int sum = count + v1;
        String s = "// not a comment";
        String t = "/* x */ count";
        for (int i = 0; i < v1; i++) {
            int step = i;
            sum += step;
        }
        {
            int count = 5; // shadows the field
            sum += count + this.count;
        }
        List<T> items = index.get(s);
        items.forEach(x -> total += x.compareTo(item));
        return sum + s.length() + t.length() + total + helper();
    }

    private int helper() {
        return count;
    }
}
"""

C = """\
#include <stdio.h>
#define SQUARE(x) ((x) * (x))
#define LONG_MACRO(a, b) \\
    ((a) + \\
     (b))

int counter = 0; /* a global: untouched */

static int scale(int value, int v1) {
    // a line comment
    int result = SQUARE(value) + v1;
    {
        int value = 2; /* shadows the parameter */
        result += value;
    }
    for (int i = 0; i < 3; i++) {
        result += i;
    }
    return result + counter;
}

int main(void) {
    const char *s = "// not a comment";
    const char *t = "/* x */ result";
    int result = scale(3, LONG_MACRO(1, 2));
    printf("%d %s %s\\n", result, s, t);
    return 0;
}
"""

SNIPPETS = [(JAVA, "java"), (C, "c")]


def test_the_four_edits_are_registered() -> None:
    assert {"rename_identifiers", "shuffle_names", "strip_comments", "strip_indentation"} <= set(EDITS.names())


@pytest.mark.parametrize(("code", "language"), SNIPPETS, ids=["java", "c"])
@pytest.mark.parametrize("edit", ["rename_identifiers", "shuffle_names", "strip_comments", "strip_indentation"])
def test_every_edit_parses_and_keeps_tokens_and_references(code: str, language: str, edit: str) -> None:
    assert syntax_errors(parse(code, language)) == []
    for seed in range(3):
        edited = apply_edit(edit, code, language, seed)
        assert check_edit(code, edited, language, edit) == []
        assert edited.code != code
        assert '"// not a comment"' in edited.code and "/* x */" in edited.code


def test_rename_java_locals_params_and_private_fields_only() -> None:
    edited = apply_edit("rename_identifiers", JAVA, "java").code
    new = [t.text for t in code_tokens(parse(edited, "java"))]
    for kept in ("total", "add", "helper", "length", "forEach", "compareTo", "Counter", "T", "get", "HashMap"):
        assert kept in new
    assert "count" not in new  # the private field, its this.count and the shadowing local
    assert "sum" not in new and "item" not in new and "x" not in new
    assert "v1" not in new  # the parameter named v1 is renamed too; no fresh name reuses it wrongly
    assert '"/* x */ count"' in edited and "mentions count in Javadoc" in edited


def test_rename_gives_shadowing_variables_distinct_names() -> None:
    tree = parse(JAVA, "java")
    res = resolve(tree, "java")
    counts = [d for d in res.declarations if d.name == "count"]
    assert len(counts) == 2 and counts[0].renamable and counts[1].renamable
    edited = apply_edit("rename_identifiers", JAVA, "java")
    assert len({edited.renames[d.start] for d in counts}) == 2


def test_a_field_accessed_on_another_object_is_not_renamed() -> None:
    code = "class P { private int x; int f(P o) { return x + o.x; } }"
    edited = apply_edit("rename_identifiers", code, "java").code
    assert edited == "class P { private int x; int f(P v1) { return x + v1.x; } }"
    assert check_edit(code, edited, "java", "rename_identifiers") == []


def test_record_components_are_public_and_kept() -> None:
    code = "record Point(int x, int y) { int sum(int k) { return x + y + k; } }"
    edited = apply_edit("rename_identifiers", code, "java")
    assert edited.code == "record Point(int x, int y) { int sum(int v1) { return x + y + v1; } }"
    assert check_edit(code, edited, "java", "rename_identifiers") == []


def test_c_rename_leaves_macros_globals_and_functions() -> None:
    edited = apply_edit("rename_identifiers", C, "c").code
    new = [t.text for t in code_tokens(parse(edited, "c"))]
    for kept in ("SQUARE", "LONG_MACRO", "counter", "scale", "main", "printf"):
        assert kept in new
    for renamed in ("value", "result", "i", "s", "t"):
        assert renamed not in new
    assert "#define SQUARE(x) ((x) * (x))" in edited


CAPTURE = "int f(int a, int b) {\n  int x = a;\n  {\n    int a = 2;\n    x += b + a;\n  }\n  return x;\n}\n"


def test_a_naive_swap_would_capture_and_the_check_sees_it() -> None:
    res = resolve(parse(CAPTURE, "c"), "c")
    a, b = (i for i, d in enumerate(res.declarations) if d.name in ("a", "b") and d.scope == 1)
    naive = apply_renames(CAPTURE, "c", res, {a: "b", b: "a"})
    assert not bindings_kept(res, resolve(parse(naive.code, "c"), "c"))
    assert check_edit(CAPTURE, naive, "c", "shuffle_names")
    for seed in range(5):
        shuffled = apply_edit("shuffle_names", CAPTURE, "c", seed)
        assert check_edit(CAPTURE, shuffled, "c", "shuffle_names") == []


def test_fresh_names_skip_ones_the_program_uses() -> None:
    code = "int f(int p) { int v1 = p; int v2 = v1; return v2; }"
    edited = apply_edit("rename_identifiers", code, "c")
    assert sorted(edited.renames.values()) == ["v3", "v4", "v5"]
    assert check_edit(code, edited, "c", "rename_identifiers") == []


def test_shuffle_is_a_seeded_derangement_per_scope() -> None:
    code = "int f(void) { int alpha = 1; int beta = 2; int gamma = 3; return alpha - beta * gamma; }"
    first = apply_edit("shuffle_names", code, "c", 7)
    assert first == apply_edit("shuffle_names", code, "c", 7)
    res = resolve(parse(code, "c"), "c")
    assert all(first.renames[d.start] != d.name for d in res.declarations)
    assert sorted(first.renames.values()) == ["alpha", "beta", "gamma"]


def test_strip_comments_removes_every_comment_and_keeps_string_markers() -> None:
    for code, language in SNIPPETS:
        edited = apply_edit("strip_comments", code, language).code
        assert not any(t.is_comment for t in tokens(parse(edited, language)))
        assert '"// not a comment"' in edited
    java = apply_edit("strip_comments", JAVA, "java").code
    assert "    private int count;\n" in java and "/**" not in java


def test_strip_indentation_keeps_continuations_and_text_blocks() -> None:
    c = apply_edit("strip_indentation", C, "c").code
    assert "\\\n    ((a) + \\\n     (b))" in c and "\nint result = SQUARE" in c
    block = 'class A {\n    String s = """\n        kept\n          as is\n        """;\n}\n'
    edited = apply_edit("strip_indentation", block, "java")
    assert '"""\n        kept\n          as is\n        """' in edited.code
    assert edited.code.startswith('class A {\nString s = """')
    assert check_edit(block, edited, "java", "strip_indentation") == []
