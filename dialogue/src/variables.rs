//! Story and derived variables (docs/CONTENT.md, "Story variables"), declared once for the game
//! in `variables.json`.
//!
//! A story variable has a type and a default and is stored per player; only `SetVariable`
//! changes it. A derived variable is a condition over facts and other variables: it is never
//! stored, and never reaches a client. [`Variables::inline_into`] writes each derived variable's
//! definition, in parentheses, where a condition names it, before the graph is built, so the
//! server's walk and the `opened.content` a client walks are the same text.
//!
//! Loading reports, on `variables.json`: a bad name, an unknown type, a default of the wrong
//! type, a derived definition that does not parse or names an undeclared variable, and a cycle
//! among derived variables (with the whole cycle). A derived variable in a cycle is inlined as
//! `false`, so the content still builds (and is refused for the error).

use std::collections::{BTreeMap, BTreeSet};

use banter_protocol::VarValue;

use crate::condition::{Condition, Reference, VarType};
use crate::diagnostic::{Diagnostic, Problem};
use crate::json::Json;
use crate::model::{Conversation, Exit};

/// The file that declares the variables, in the content folder (optional).
pub const VARIABLES_FILE: &str = "variables.json";
/// The longest variable name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;
/// Facts the server owns: content may read them, never set them.
pub const READ_ONLY_FACTS: [&str; 4] = ["coins", "experience", "tutorial_stage", "opens"];

/// A story variable's declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    pub ty: VarType,
    pub default: VarValue,
}

/// Every variable of the game.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Variables {
    /// Story variables by name.
    pub declared: BTreeMap<String, Declared>,
    /// Derived variables by name: their definitions with every derived variable they name
    /// already written in (`false` for one in a cycle).
    pub derived: BTreeMap<String, String>,
}

impl Variables {
    /// The type a condition sees `name` as: a story variable's, or `bool` for a derived one.
    pub fn type_of(&self, name: &str) -> Option<VarType> {
        match self.declared.get(name) {
            Some(d) => Some(d.ty),
            None => self.derived.contains_key(name).then_some(VarType::Bool),
        }
    }

    /// Parses a `variables.json`'s bytes; `file` names it in diagnostics.
    pub fn parse(file: &str, bytes: &[u8], diagnostics: &mut Vec<Diagnostic>) -> Variables {
        let root = match crate::json::parse_bytes(file, bytes) {
            Ok(root) => root,
            Err(d) => {
                diagnostics.push(*d);
                return Variables::default();
            }
        };
        let error = |field: String, message: String| {
            Diagnostic::error(file, Problem::VariableDeclaration(message)).field(field)
        };
        let Json::Object(fields) = root else {
            diagnostics.push(error(
                String::new(),
                "expected an object with `Variables` and `Derived`".to_owned(),
            ));
            return Variables::default();
        };
        let mut out = Variables::default();
        let mut definitions: BTreeMap<String, String> = BTreeMap::new();
        for (key, value) in &fields {
            match (key.as_str(), value) {
                ("Variables", Json::Object(vars)) => {
                    for (name, decl) in vars {
                        let at = format!("Variables.{name}");
                        if let Some(problem) = bad_name(name) {
                            diagnostics.push(error(at, problem));
                            continue;
                        }
                        match declaration(decl) {
                            Ok(declared) => {
                                out.declared.insert(name.clone(), declared);
                            }
                            Err(message) => diagnostics.push(error(at, message)),
                        }
                    }
                }
                ("Derived", Json::Object(derived)) => {
                    for (name, definition) in derived {
                        let at = format!("Derived.{name}");
                        if let Some(problem) = bad_name(name) {
                            diagnostics.push(error(at, problem));
                            continue;
                        }
                        match definition {
                            Json::String(text) => {
                                definitions.insert(name.clone(), text.clone());
                            }
                            _ => diagnostics.push(error(
                                at,
                                "a derived variable is a condition, written as a string".to_owned(),
                            )),
                        }
                    }
                }
                ("Variables" | "Derived", _) => diagnostics.push(error(
                    key.clone(),
                    "expected an object of variables by name".to_owned(),
                )),
                _ => diagnostics.push(
                    Diagnostic::error(file, Problem::UnknownField(key.clone())).field(key.clone()),
                ),
            }
        }
        for name in definitions.keys() {
            if out.declared.contains_key(name) {
                diagnostics.push(error(
                    format!("Derived.{name}"),
                    format!("`{name}` is declared both as a story variable and as a derived one"),
                ));
            }
        }
        // Each definition's own check: it parses, names declared variables, types right.
        let known: BTreeSet<&str> = out
            .declared
            .keys()
            .chain(definitions.keys())
            .map(String::as_str)
            .collect();
        let mut references: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (name, text) in &definitions {
            let at = format!("Derived.{name}");
            match Condition::parse(text) {
                Err(e) => diagnostics
                    .push(Diagnostic::error(file, Problem::BadCondition(e.to_string())).field(at)),
                Ok(condition) => {
                    let mut named = Vec::new();
                    condition.visit_references(&mut |r| {
                        if let Reference::Variable(v) = r {
                            named.push(v.to_owned());
                        }
                    });
                    for v in &named {
                        if !known.contains(v.as_str()) {
                            diagnostics.push(
                                Diagnostic::error(file, Problem::UndeclaredVariable(v.clone()))
                                    .field(at.clone()),
                            );
                        }
                    }
                    let type_of = |v: &str| match out.declared.get(v) {
                        Some(d) => Some(d.ty),
                        None => definitions.contains_key(v).then_some(VarType::Bool),
                    };
                    for message in condition.type_errors(&type_of) {
                        diagnostics.push(
                            Diagnostic::error(file, Problem::VariableType(message))
                                .field(at.clone()),
                        );
                    }
                    references.insert(name, named);
                }
            }
        }
        let cyclic = cycles(&references, file, diagnostics);
        // Inline in dependency order: a definition's derived names are written in first.
        for name in definitions.keys() {
            let text = inline_derived(name, &definitions, &cyclic, &mut Vec::new());
            out.derived.insert(name.clone(), text);
        }
        out
    }

    /// Writes every derived variable's definition where a condition of `conversation` names it,
    /// in parentheses. Conditions that name none are left as they are.
    pub fn inline_into(&self, conversation: &mut Conversation) {
        if self.derived.is_empty() {
            return;
        }
        let inline = |text: &mut Option<String>| {
            if let Some(t) = text.as_mut()
                && t.contains('$')
            {
                *t = self.inline(t);
            }
        };
        for node in conversation.nodes.values_mut() {
            inline(&mut node.conditions);
            if let Exit::Responses(responses) = &mut node.exit {
                for response in responses {
                    inline(&mut response.conditions);
                }
            }
        }
    }

    /// `text` with each `$Derived` replaced by `(definition)`. A `$` inside a string literal
    /// is left alone; so is a name that is not a derived variable.
    pub fn inline(&self, text: &str) -> String {
        replace_variables(text, |name| {
            self.derived.get(name).map(|d| format!("({d})"))
        })
    }
}

/// Why `name` cannot name a variable, if it cannot.
fn bad_name(name: &str) -> Option<String> {
    let mut bytes = name.bytes();
    let ok = name.len() <= MAX_NAME_BYTES
        && bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    (!ok).then(|| {
        format!(
            "`{name}` is not a variable name: a letter or `_`, then letters, digits and `_`, \
             at most {MAX_NAME_BYTES} bytes"
        )
    })
}

/// A story variable's `{ "Type": ..., "Default": ... }`.
fn declaration(decl: &Json) -> Result<Declared, String> {
    let Json::Object(fields) = decl else {
        return Err("expected `{ \"Type\": ..., \"Default\": ... }`".to_owned());
    };
    let mut ty = None;
    let mut default = None;
    for (key, value) in fields {
        match key.as_str() {
            "Type" => {
                let Json::String(name) = value else {
                    return Err("`Type` is `bool`, `int` or `string`".to_owned());
                };
                ty = Some(
                    VarType::ALL
                        .into_iter()
                        .find(|t| t.name() == name)
                        .ok_or_else(|| format!("unknown type `{name}` (bool, int or string)"))?,
                );
            }
            "Default" => default = Some(value),
            other => return Err(format!("unknown field `{other}` (Type, Default)")),
        }
    }
    let ty = ty.ok_or("missing `Type`")?;
    let default = default.ok_or("missing `Default`")?;
    let value = match (ty, default) {
        (VarType::Bool, Json::Bool(b)) => Some(VarValue::Bool(*b)),
        (VarType::Int, Json::Number(n)) => n.as_i64().map(VarValue::Int),
        (VarType::Text, Json::String(s)) => VarType::Text.parse(s),
        _ => None,
    };
    value
        .map(|default| Declared { ty, default })
        .ok_or_else(|| {
            format!(
                "`Default` is not of type {}{}",
                ty.name(),
                if ty == VarType::Text {
                    " of 1 to 64 bytes"
                } else {
                    ""
                }
            )
        })
}

/// Reports every cycle among derived variables (one error per cycle, naming it whole) and
/// answers the variables on one.
fn cycles(
    references: &BTreeMap<&str, Vec<String>>,
    file: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> BTreeSet<String> {
    let mut on_cycle = BTreeSet::new();
    for &start in references.keys() {
        if on_cycle.contains(start) {
            continue;
        }
        // Depth-first from `start`, looking for a way back to it.
        let mut path = vec![start.to_owned()];
        if let Some(cycle) = back_to(start, start, references, &mut path, &mut BTreeSet::new()) {
            diagnostics.push(
                Diagnostic::error(file, Problem::DerivedCycle(cycle.join(" -> ")))
                    .field(format!("Derived.{start}")),
            );
            on_cycle.extend(cycle);
        }
    }
    on_cycle
}

fn back_to(
    start: &str,
    at: &str,
    references: &BTreeMap<&str, Vec<String>>,
    path: &mut Vec<String>,
    visited: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    for next in references.get(at).into_iter().flatten() {
        if next == start {
            let mut cycle = path.clone();
            cycle.push(start.to_owned());
            return Some(cycle);
        }
        if references.contains_key(next.as_str()) && visited.insert(next.clone()) {
            path.push(next.clone());
            if let Some(cycle) = back_to(start, next, references, path, visited) {
                return Some(cycle);
            }
            path.pop();
        }
    }
    None
}

/// `name`'s definition with the derived variables it names written in; `false` for a
/// variable on a cycle.
fn inline_derived(
    name: &str,
    definitions: &BTreeMap<String, String>,
    cyclic: &BTreeSet<String>,
    stack: &mut Vec<String>,
) -> String {
    if cyclic.contains(name) || stack.iter().any(|s| s == name) {
        return "false".to_owned();
    }
    let Some(text) = definitions.get(name) else {
        return "false".to_owned();
    };
    stack.push(name.to_owned());
    let out = replace_variables(text, |v| {
        definitions
            .contains_key(v)
            .then(|| format!("({})", inline_derived(v, definitions, cyclic, stack)))
    });
    stack.pop();
    out
}

/// `text` with each `$NAME` token (outside string literals) for which `with` answers replaced
/// by that answer.
fn replace_variables(text: &str, mut with: impl FnMut(&str) -> Option<String>) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip the literal: to the closing quote, or the end (the parser reports it).
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += 1;
                }
                i += 1;
            }
            b'$' => {
                let start = i;
                i += 1;
                let name_start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                if let Some(replacement) = with(&text[name_start..i]) {
                    out.push_str(&text[copied..start]);
                    out.push_str(&replacement);
                    copied = i;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied.min(text.len())..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> (Variables, Vec<Diagnostic>) {
        let mut diagnostics = Vec::new();
        let vars = Variables::parse("variables.json", json.as_bytes(), &mut diagnostics);
        (vars, diagnostics)
    }

    #[test]
    fn derived_variables_are_written_in_and_cycles_named_whole() {
        let (vars, d) = parse(
            r#"{"Variables": {"Met": {"Type": "bool", "Default": false},
                              "Nets": {"Type": "int", "Default": 0}},
                "Derived": {"Regular": "opens >= 2 || $Busy", "Busy": "$Nets >= 3 && $Met"}}"#,
        );
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(
            vars.inline(r#"$Regular && $Mood == "$Regular" && $Met"#),
            r#"(opens >= 2 || ($Nets >= 3 && $Met)) && $Mood == "$Regular" && $Met"#
        );
        let (vars, d) = parse(r#"{"Derived": {"A": "$B", "B": "$C || true", "C": "$A"}}"#);
        let cycles: Vec<String> = d.iter().map(|d| d.problem.to_string()).collect();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert!(cycles[0].contains("A -> B -> C -> A"), "{cycles:?}");
        assert_eq!(vars.inline("$A"), "(false)");
    }

    #[test]
    fn declarations_are_checked() {
        let (_, d) = parse(
            r#"{"Variables": {"1x": {"Type": "bool", "Default": false},
                              "N": {"Type": "int", "Default": "3"},
                              "T": {"Type": "float", "Default": 1}},
                "Derived": {"D": "$N", "E": "$Nope"}}"#,
        );
        let text: Vec<String> = d.iter().map(|d| d.to_string()).collect();
        assert_eq!(d.len(), 5, "{text:#?}");
        for needle in [
            "not a variable name",
            "`Default` is not of type int",
            "unknown type `float`",
            "undeclared variable `Nope`",
        ] {
            assert!(
                text.iter().any(|t| t.contains(needle)),
                "{needle}: {text:#?}"
            );
        }
    }
}
