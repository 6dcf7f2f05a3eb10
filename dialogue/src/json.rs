//! A strict JSON tree and the decoding helpers both source formats share.
//!
//! `serde_json::Value` silently keeps the last of two equal keys; content with a node or a field
//! written twice is a mistake a writer wants to hear about, so objects here keep their entries in
//! order and a repeated key is a syntax error with its line and column.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use banter_protocol::{
    Action, ActionType, ChoiceMode, FieldKind, FieldValue, ObjectiveAmount, TieRule,
};
use strum::VariantArray;

use crate::diagnostic::{Diagnostic, Position, Problem, position_of};
use crate::model::{ChoiceSpec, MAX_TIME_LIMIT_SECS};

/// The largest content file the loader reads, so a stray huge file cannot exhaust memory.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// A JSON value with ordered, duplicate-free objects.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The JSON type name, for "expected X, found Y" messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        // Small objects (fields of a node) check duplicates by scanning; a conversation's
        // top level can hold 100,000 nodes, so past a few keys a set keeps it linear.
        const SCAN_LIMIT: usize = 16;
        let mut entries: Vec<(String, Json)> = Vec::new();
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let duplicate = if entries.len() < SCAN_LIMIT {
                entries.iter().any(|(k, _)| *k == key)
            } else {
                if seen.is_empty() {
                    seen.extend(entries.iter().map(|(k, _)| k.clone()));
                }
                !seen.insert(key.clone())
            };
            if duplicate {
                return Err(de::Error::custom(format_args!(
                    "the key `{key}` appears twice"
                )));
            }
            let value = map.next_value()?;
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

/// Parses file bytes into a strict JSON tree, with every failure located. Refuses more than
/// [`MAX_FILE_BYTES`].
pub fn parse_bytes(file: &str, bytes: &[u8]) -> Result<Json, Box<Diagnostic>> {
    parse_bytes_with_limit(file, bytes, MAX_FILE_BYTES)
}

/// [`parse_bytes`] with the caller's size limit (benchmarks and tools building huge synthetic
/// conversations in memory raise it).
pub fn parse_bytes_with_limit(
    file: &str,
    bytes: &[u8],
    limit: u64,
) -> Result<Json, Box<Diagnostic>> {
    if bytes.len() as u64 > limit {
        return Err(Box::new(Diagnostic::error(
            file,
            Problem::TooLarge {
                size: bytes.len() as u64,
                limit,
            },
        )));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Box::new(Diagnostic::error(file, Problem::NotUtf8).at(position_of(bytes, e.valid_up_to())))
    })?;
    if text.trim().is_empty() {
        return Err(Box::new(Diagnostic::error(file, Problem::Empty)));
    }
    serde_json::from_str::<Json>(text).map_err(|e| {
        let message = e.to_string();
        // serde_json appends " at line L column C"; the position is reported separately.
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(m, _)| m)
            .to_owned();
        Box::new(
            Diagnostic::error(file, Problem::Syntax(message)).at(Position {
                line: e.line(),
                column: e.column(),
            }),
        )
    })
}

/// Decoding context: which file and node a value belongs to, collecting diagnostics.
pub struct Decoder<'a> {
    pub file: &'a str,
    pub diagnostics: &'a mut Vec<Diagnostic>,
}

impl Decoder<'_> {
    pub fn error(&mut self, node: Option<&str>, field: &str, problem: Problem) {
        let mut d = Diagnostic::error(self.file, problem).field(field);
        if let Some(node) = node {
            d = d.node(node);
        }
        self.diagnostics.push(d);
    }

    /// The one unknown-field check: every key of `fields` that `known` does not hold is an
    /// `UnknownField` error at `<at>.<key>` (at `<key>` when `at` is `None`). True when every
    /// key is known.
    pub fn unknown_fields<'k>(
        &mut self,
        node: Option<&str>,
        at: Option<&str>,
        fields: impl IntoIterator<Item = &'k String>,
        known: impl Fn(&str) -> bool,
    ) -> bool {
        let mut all_known = true;
        for key in fields {
            if !known(key) {
                let field = match at {
                    Some(at) => format!("{at}.{key}"),
                    None => key.clone(),
                };
                self.error(node, &field, Problem::UnknownField(key.clone()));
                all_known = false;
            }
        }
        all_known
    }

    pub fn wrong_type(
        &mut self,
        node: Option<&str>,
        field: &str,
        expected: &'static str,
        v: &Json,
    ) {
        self.error(
            node,
            field,
            Problem::WrongType {
                expected,
                found: v.kind(),
            },
        );
    }

    /// A string field; `None` (with a diagnostic) if it is anything else.
    pub fn string(&mut self, node: Option<&str>, field: &str, v: &Json) -> Option<String> {
        match v {
            Json::String(s) => Some(s.clone()),
            other => {
                self.wrong_type(node, field, "a string", other);
                None
            }
        }
    }

    pub fn boolean(&mut self, node: Option<&str>, field: &str, v: &Json) -> Option<bool> {
        match v {
            Json::Bool(b) => Some(*b),
            other => {
                self.wrong_type(node, field, "a boolean", other);
                None
            }
        }
    }

    /// A non-empty identifier (quest, node, objective names).
    pub fn ident(
        &mut self,
        node: Option<&str>,
        field: &str,
        name: &'static str,
        v: &Json,
    ) -> Option<String> {
        let s = self.string(node, field, v)?;
        if s.is_empty() {
            self.error(node, field, Problem::EmptyValue(name));
            return None;
        }
        Some(s)
    }

    /// `Conditions`: one expression, or a list of expressions that must all hold.
    pub fn conditions(&mut self, node: Option<&str>, field: &str, v: &Json) -> Option<String> {
        match v {
            Json::String(s) => Some(s.clone()),
            Json::Array(items) => {
                let mut parts = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    parts.push(format!(
                        "({})",
                        self.string(node, &format!("{field}[{}]", i + 1), item)?
                    ));
                }
                Some(if parts.is_empty() {
                    "true".to_owned()
                } else {
                    parts.join(" && ")
                })
            }
            other => {
                self.wrong_type(node, field, "a string or an array of strings", other);
                None
            }
        }
    }

    /// `Shared` (a conversation's) or `Choice` (a node's): an object of `Mode`, `TimeLimit` and
    /// `Tie`, each optional. `None` only when it is not an object; a bad key or value is
    /// reported and left out, so the rest of the rule still stands.
    pub fn choice(&mut self, node: Option<&str>, field: &str, v: &Json) -> Option<ChoiceSpec> {
        let Json::Object(entries) = v else {
            self.wrong_type(node, field, "an object of Mode, TimeLimit and Tie", v);
            return None;
        };
        let mut spec = ChoiceSpec::default();
        for (key, value) in entries {
            let at = format!("{field}.{key}");
            match key.as_str() {
                "Mode" => {
                    spec.mode = self.named(
                        node,
                        &at,
                        value,
                        ChoiceMode::VARIANTS,
                        "`Leader`, `Majority`, `Roll` or `All`",
                    );
                }
                "Tie" => {
                    spec.tie = self.named(
                        node,
                        &at,
                        value,
                        TieRule::VARIANTS,
                        "`Leader`, `First` or `Roll`",
                    );
                }
                "TimeLimit" => match value {
                    Json::Number(n) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
                        Some(secs) if (1..=MAX_TIME_LIMIT_SECS).contains(&secs) => {
                            spec.time_limit = Some(secs);
                        }
                        _ => self.error(node, &at, Problem::BadTimeLimit(n.to_string())),
                    },
                    other => self.wrong_type(node, &at, "a whole number of seconds", other),
                },
                other => self.error(node, &at, Problem::UnknownField(other.to_owned())),
            }
        }
        Some(spec)
    }

    /// A string naming one of `variants` (by its Rust name, as content spells it).
    fn named<T: Copy + Into<&'static str>>(
        &mut self,
        node: Option<&str>,
        field: &str,
        v: &Json,
        variants: &[T],
        expected: &'static str,
    ) -> Option<T> {
        let name = self.string(node, field, v)?;
        let found = variants
            .iter()
            .copied()
            .find(|&variant| variant.into() == name.as_str());
        if found.is_none() {
            self.error(
                node,
                field,
                Problem::UnknownValue {
                    value: name,
                    expected,
                },
            );
        }
        found
    }

    /// `Actions`: an array of action objects.
    pub fn actions(&mut self, node: Option<&str>, field: &str, v: &Json) -> Vec<Action> {
        let Json::Array(items) = v else {
            self.wrong_type(node, field, "an array of actions", v);
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| self.action(node, &format!("{field}[{}]", i + 1), item))
            .collect()
    }

    /// One action object: `Type` and exactly the fields that type takes.
    pub fn action(&mut self, node: Option<&str>, field: &str, v: &Json) -> Option<Action> {
        let Json::Object(entries) = v else {
            self.wrong_type(node, field, "an action object", v);
            return None;
        };
        let Some((_, type_value)) = entries.iter().find(|(k, _)| k == "Type") else {
            self.error(node, field, Problem::MissingField("Type"));
            return None;
        };
        let type_name = self.string(node, &format!("{field}.Type"), type_value)?;
        let action_type = match type_name.parse::<ActionType>() {
            Ok(t) => t,
            Err(e) => {
                self.error(
                    node,
                    &format!("{field}.Type"),
                    Problem::BadAction(e.to_string()),
                );
                return None;
            }
        };
        // The fields come from the action's declaration (banter-protocol's `action.rs`).
        let spec = action_type.spec();
        let mut ok =
            self.unknown_fields(node, Some(field), entries.iter().map(|(k, _)| k), |key| {
                key == "Type" || spec.content_keys().any(|k| k == key)
            });
        let find = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        let mut values = Vec::with_capacity(spec.fields.len());
        let mut complete = true;
        for declared in spec.fields {
            let key = declared.key();
            let at = format!("{field}.{key}");
            match declared.kind {
                FieldKind::Ident => {
                    let value = match find(key) {
                        None => {
                            self.error(node, &at, Problem::MissingField(key));
                            None
                        }
                        Some(v) => self.ident(node, &at, key, v),
                    };
                    complete &= value.is_some();
                    values.push(FieldValue::Text(value.unwrap_or_default()));
                }
                // A missing target is reported by the content check (CheckQuestTargets).
                FieldKind::Target => {
                    let value = find(key).and_then(|v| self.ident(node, &at, key, v));
                    values.push(FieldValue::Text(value.unwrap_or_default()));
                }
                FieldKind::OptionalIdent => {
                    let value = find(key).and_then(|v| self.ident(node, &at, key, v));
                    values.push(FieldValue::Maybe(value));
                }
                FieldKind::Amount => {
                    let amount = match find(key) {
                        None => None,
                        Some(Json::Number(n)) => {
                            match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
                                Some(n) if n > 0 => Some(n),
                                _ => {
                                    self.error(
                                        node,
                                        &at,
                                        Problem::BadAction(format!(
                                            "{key} must be a whole number from 1 to {}, found {n}",
                                            u32::MAX
                                        )),
                                    );
                                    ok = false;
                                    None
                                }
                            }
                        }
                        Some(other) => {
                            self.wrong_type(node, &at, "a number", other);
                            ok = false;
                            None
                        }
                    };
                    let island_key = declared.keys.get(1).copied().unwrap_or(key);
                    let island = match find(island_key) {
                        None => None,
                        Some(v) => {
                            let island =
                                self.ident(node, &format!("{field}.{island_key}"), island_key, v);
                            ok &= island.is_some();
                            island
                        }
                    };
                    // Naming an island forces the amount, even when it is 1 (article 7.3).
                    values.push(FieldValue::Amount(match (amount, island) {
                        (None, None) => None,
                        (amount, island) => Some(ObjectiveAmount {
                            amount: amount.unwrap_or(1),
                            island,
                        }),
                    }));
                }
            }
        }
        if !complete {
            return None;
        }
        let action = Action::from_fields(action_type, values)?;
        ok.then_some(action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_an_error_in_small_and_large_objects() {
        for size in [2usize, 15, 16, 17, 40] {
            let mut keys: Vec<String> = (0..size).map(|i| format!("\"k{i}\":{i}")).collect();
            keys.push("\"k1\":0".to_owned());
            let text = format!("{{{}}}", keys.join(","));
            let err = parse_bytes("f.json", text.as_bytes()).expect_err("duplicate");
            assert!(
                matches!(&err.problem, Problem::Syntax(m) if m.contains("`k1` appears twice")),
                "{size}: {err}"
            );
            assert!(err.position.is_some());
        }
    }
}
