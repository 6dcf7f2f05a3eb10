//! Pictures of a merged conversation, for writers: Graphviz `dot` and Mermaid flowcharts.
//!
//! A conversation is a flat map of names that refer to each other, which reads badly as text
//! once it has loops and layers. Drawn, the shape is obvious: NPC lines are boxes, the player's
//! responses rounded, branches diamonds; edges leave a vertex in the order the walk tries them,
//! labelled with that priority when there is a choice; a quest check's two outcomes are dashed
//! edges to the success and failure lines, because they are the server's jump, not an edge the
//! client follows. Actions and conditions are written on the vertex that carries them.
//!
//! Output is deterministic (vertex ids, edge order) so a picture can be diffed, and every piece
//! of content text is escaped for the target language: a quote, a backslash or a newline in a
//! line cannot break the file.

use std::fmt::Write as _;
use std::str::FromStr;

use banter_protocol::Action;

use crate::condition::{Comparison, Condition, Value};
use crate::graph::{DialogueGraph, Vertex, VertexId, VertexKind};

/// Longest piece of content text on a label, in characters; longer text is cut with `…`.
pub const LABEL_CHARS: usize = 40;

/// The picture languages `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Dot,
    Mermaid,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "dot" => Ok(Format::Dot),
            "mermaid" => Ok(Format::Mermaid),
            other => Err(format!("unknown format `{other}` (dot, mermaid)")),
        }
    }
}

/// Writes the graph in the given format.
pub fn export(graph: &DialogueGraph, format: Format) -> String {
    match format {
        Format::Dot => to_dot(graph),
        Format::Mermaid => to_mermaid(graph),
    }
}

/// One line of a label, before escaping.
type Lines = Vec<String>;

/// The label lines of a vertex: what it is, its (cut) text, its condition and its actions.
fn label(graph: &DialogueGraph, id: VertexId, v: &Vertex) -> Lines {
    let mut lines = Lines::new();
    match v.kind {
        VertexKind::Root => lines.push("start".to_owned()),
        VertexKind::Prompt => {
            lines.push(v.name.to_string());
            if !v.text.is_empty() {
                lines.push(format!("\u{201c}{}\u{201d}", cut(&v.text)));
            }
        }
        VertexKind::Response => lines.push(format!("{}. {}", v.priority, cut(&v.text))),
        VertexKind::Branch => lines.push("first that holds".to_owned()),
        VertexKind::Condition => lines.push("condition".to_owned()),
        VertexKind::Action => lines.push("action".to_owned()),
    }
    if let Some(condition) = graph.condition(id) {
        lines.push(format!("if {}", cut(&condition_text(condition))));
    }
    for (_, authored) in graph.actions(id) {
        let payload = &authored.payload;
        lines.push(if payload.is_empty() {
            format!("\u{25b8} {}", authored.action_type)
        } else {
            format!("\u{25b8} {} {}", authored.action_type, cut(payload))
        });
    }
    if v.close {
        lines.push("(closes)".to_owned());
    }
    lines
}

/// The dashed jump edges of a quest check: `(target, "success" | "failure")`.
fn jumps(graph: &DialogueGraph, id: VertexId) -> Vec<(VertexId, &'static str)> {
    let mut out = Vec::new();
    for (_, authored) in graph.actions(id) {
        if let Action::CheckQuest {
            success_node,
            failure_node,
            ..
        } = &authored.action
        {
            for (target, outcome) in [(success_node, "success"), (failure_node, "failure")] {
                let prompt = graph.find(target).filter(|&t| {
                    graph
                        .vertex(t)
                        .is_some_and(|t| t.kind == VertexKind::Prompt)
                });
                out.extend(prompt.map(|t| (t, outcome)));
            }
        }
    }
    out
}

/// An edge as the diagrams draw it: an output of a vertex, labelled with its number when the
/// vertex has several, or a quest check's jump on its outcome.
enum Edge {
    Output(VertexId, VertexId, Option<String>),
    Jump(VertexId, VertexId, &'static str),
}

/// Every edge, vertex by vertex: its outputs in order, then its quest checks' jumps.
fn edges(graph: &DialogueGraph) -> Vec<Edge> {
    let mut edges = Vec::new();
    for (id, _) in graph.vertices() {
        let outputs = graph.outputs(id);
        for (i, target) in outputs.iter().enumerate() {
            edges.push(Edge::Output(id, *target, edge_label(outputs, i)));
        }
        for (target, outcome) in jumps(graph, id) {
            edges.push(Edge::Jump(id, target, outcome));
        }
    }
    edges
}

/// The label of an output edge: its priority, only where the walk has a choice to order.
fn edge_label(outputs: &[VertexId], position: usize) -> Option<String> {
    (outputs.len() > 1).then(|| (position + 1).to_string())
}

/// Text on one line, cut to [`LABEL_CHARS`] characters. Line breaks and other control
/// characters become spaces: the picture's own line breaks are the label's structure.
fn cut(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.chars().count() <= LABEL_CHARS {
        return flat.to_owned();
    }
    let mut out: String = flat.chars().take(LABEL_CHARS - 1).collect();
    out.truncate(out.trim_end().len());
    out.push('\u{2026}');
    out
}

/// A condition written back in the content's grammar (condition.rs), for labels.
fn condition_text(c: &Condition) -> String {
    fn value(v: &Value) -> String {
        match v {
            Value::Int(i) => i.to_string(),
            Value::Counter(c) => c.name().to_owned(),
            Value::Progress { quest, objective } => format!("progress({quest}, {objective})"),
            Value::Text(t) => format!("\"{t}\""),
            Value::Variable(name) => format!("${name}"),
            Value::Visits(vertex) => format!("visits({vertex})"),
        }
    }
    fn join(cs: &[Condition], op: &str) -> String {
        cs.iter()
            .map(|c| match c {
                Condition::All(_) | Condition::Any(_) => format!("({})", condition_text(c)),
                _ => condition_text(c),
            })
            .collect::<Vec<_>>()
            .join(op)
    }
    match c {
        Condition::Const(b) => b.to_string(),
        Condition::Not(inner) => match **inner {
            Condition::All(_) | Condition::Any(_) | Condition::Compare { .. } => {
                format!("!({})", condition_text(inner))
            }
            _ => format!("!{}", condition_text(inner)),
        },
        Condition::All(cs) => join(cs, " && "),
        Condition::Any(cs) => join(cs, " || "),
        Condition::Has(name) => format!("has({name})"),
        Condition::Variable(name) => format!("${name}"),
        Condition::Visited(vertex) => format!("visited({vertex})"),
        Condition::Quest { quest, is, status } => {
            format!(
                "quest({quest}) {} {}",
                if *is { "==" } else { "!=" },
                status.name()
            )
        }
        Condition::Compare { left, op, right } => {
            let op = match op {
                Comparison::Eq => "==",
                Comparison::Ne => "!=",
                Comparison::Lt => "<",
                Comparison::Le => "<=",
                Comparison::Gt => ">",
                Comparison::Ge => ">=",
            };
            format!("{} {op} {}", value(left), value(right))
        }
    }
}

/// Escapes text for a double-quoted Graphviz string. Inside one, `"` ends the string and `\`
/// starts an escape that Graphviz interprets in labels (`\n`, `\l`, `\N`), so both are escaped.
fn dot_escape(text: &str) -> String {
    escape_with(text, |c| match c {
        '"' => Some("\\\""),
        '\\' => Some("\\\\"),
        _ => None,
    })
}

/// `text` with each character that `escaped` has an escape for replaced by it, and control
/// characters by spaces.
fn escape_with(text: &str, escaped: impl Fn(char) -> Option<&'static str>) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match escaped(c) {
            Some(escape) => out.push_str(escape),
            None if c.is_control() => out.push(' '),
            None => out.push(c),
        }
    }
    out
}

/// A Graphviz picture of the graph.
pub fn to_dot(graph: &DialogueGraph) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", dot_escape(graph.name()));
    let title = match graph.speaker() {
        Some(speaker) => format!("{} ({speaker})", graph.name()),
        None => graph.name().to_owned(),
    };
    let _ = writeln!(out, "  label=\"{}\";", dot_escape(&title));
    out.push_str("  labelloc=t;\n  rankdir=TB;\n");
    out.push_str("  node [fontname=\"Helvetica\", fontsize=10];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for (id, v) in graph.vertices() {
        let shape = match v.kind {
            VertexKind::Root => {
                "shape=circle, style=filled, fillcolor=\"#333333\", fontcolor=white"
            }
            VertexKind::Prompt if v.close => "shape=box, peripheries=2",
            VertexKind::Prompt => "shape=box",
            VertexKind::Response => "shape=box, style=\"rounded,filled\", fillcolor=\"#e8f0fe\"",
            VertexKind::Branch => "shape=diamond",
            VertexKind::Condition => "shape=hexagon",
            VertexKind::Action => "shape=parallelogram",
        };
        let lines: Vec<String> = label(graph, id, v).iter().map(|l| dot_escape(l)).collect();
        let _ = writeln!(
            out,
            "  v{} [label=\"{}\", {shape}];",
            id.0,
            lines.join("\\n")
        );
    }
    for edge in edges(graph) {
        let _ = match edge {
            Edge::Output(from, to, Some(l)) => {
                writeln!(out, "  v{} -> v{} [label=\"{l}\"];", from.0, to.0)
            }
            Edge::Output(from, to, None) => writeln!(out, "  v{} -> v{};", from.0, to.0),
            Edge::Jump(from, to, outcome) => {
                let color = if outcome == "success" {
                    "darkgreen"
                } else {
                    "firebrick"
                };
                writeln!(
                    out,
                    "  v{} -> v{} [label=\"{outcome}\", style=dashed, color={color}, fontcolor={color}];",
                    from.0, to.0
                )
            }
        };
    }
    out.push_str("}\n");
    out
}

/// Escapes text for a double-quoted Mermaid label. Mermaid reads `#name;` entity codes and
/// HTML inside labels, so `"`, `#`, `<`, `>` and `&` become entity codes, and backticks (which
/// switch a label to markdown) too.
fn mermaid_escape(text: &str) -> String {
    escape_with(text, |c| match c {
        '"' => Some("#quot;"),
        '#' => Some("#35;"),
        '<' => Some("#lt;"),
        '>' => Some("#gt;"),
        '&' => Some("#amp;"),
        '`' => Some("#96;"),
        _ => None,
    })
}

/// A Mermaid flowchart of the graph.
pub fn to_mermaid(graph: &DialogueGraph) -> String {
    let mut out = String::new();
    let title = match graph.speaker() {
        Some(speaker) => format!("{} ({speaker})", graph.name()),
        None => graph.name().to_owned(),
    };
    // A comment line cannot hold a line break, so the title is flattened; escaped like a label
    // so that no tool that reads comments can be confused by it either.
    let _ = writeln!(out, "%% {}", mermaid_escape(&cut(&title)));
    out.push_str("flowchart TD\n");
    for (id, v) in graph.vertices() {
        let text: Vec<String> = label(graph, id, v)
            .iter()
            .map(|l| mermaid_escape(l))
            .collect();
        let text = text.join("<br/>");
        let (open, close) = match v.kind {
            VertexKind::Root => ("((", "))"),
            VertexKind::Prompt => ("[", "]"),
            VertexKind::Response => ("(", ")"),
            VertexKind::Branch => ("{", "}"),
            VertexKind::Condition => ("{{", "}}"),
            VertexKind::Action => ("[/", "/]"),
        };
        let _ = writeln!(out, "  v{}{open}\"{text}\"{close}", id.0);
    }
    for edge in edges(graph) {
        let _ = match edge {
            Edge::Output(from, to, Some(l)) => writeln!(out, "  v{} -->|{l}| v{}", from.0, to.0),
            Edge::Output(from, to, None) => writeln!(out, "  v{} --> v{}", from.0, to.0),
            Edge::Jump(from, to, outcome) => {
                writeln!(out, "  v{} -.->|{outcome}| v{}", from.0, to.0)
            }
        };
    }
    let closes: Vec<String> = graph
        .vertices()
        .filter(|(_, v)| v.close)
        .map(|(id, _)| format!("v{}", id.0))
        .collect();
    let responses: Vec<String> = graph
        .vertices()
        .filter(|(_, v)| v.kind == VertexKind::Response)
        .map(|(id, _)| format!("v{}", id.0))
        .collect();
    out.push_str("  classDef response fill:#e8f0fe,stroke:#5b7bd5\n");
    out.push_str("  classDef closes stroke-width:3px\n");
    if !responses.is_empty() {
        let _ = writeln!(out, "  class {} response", responses.join(","));
    }
    if !closes.is_empty() {
        let _ = writeln!(out, "  class {} closes", closes.join(","));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_characters_not_bytes() {
        assert_eq!(cut("short"), "short");
        let long = "é".repeat(100);
        let c = cut(&long);
        assert_eq!(c.chars().count(), LABEL_CHARS);
        assert!(c.ends_with('\u{2026}'));
        assert_eq!(cut("two\nlines"), "two lines");
    }

    #[test]
    fn escapes_break_nothing() {
        assert_eq!(dot_escape(r#"say "hi" \n"#), r#"say \"hi\" \\n"#);
        assert_eq!(
            mermaid_escape("a \"b\" <c> #d"),
            "a #quot;b#quot; #lt;c#gt; #35;d"
        );
    }

    #[test]
    fn conditions_round_trip_through_their_text() {
        for text in [
            "coins >= 100",
            "quest(Q) == completed && !has(PostReveal)",
            "(has(A) || has(B)) && progress(Q, O) < -3",
            "!(coins > 2 && has(X))",
        ] {
            let parsed = Condition::parse(text).expect(text);
            let written = condition_text(&parsed);
            assert_eq!(
                Condition::parse(&written).expect(&written),
                parsed,
                "{text}"
            );
        }
    }
}
