//! `ActionPayload`: the one canonical string form of an authored action (article section 7.3).
//!
//! The server accepts an action from a client only if an armed action on the walk has the same
//! type and `ActionPayload::build(action) == payload`. Fields are positional and separated by
//! `|`, exactly as in the article: `CheckQuest` is `questId|successNode|failureNode`,
//! `AdvanceObjective` is `questId|objectiveId[|amount[|island]]`.
//!
//! Beyond the article: an identifier may itself contain `|` or `\`. Both are escaped with a
//! backslash (`\|`, `\\`), so `parse(build(x)) == x` for every action, while every payload whose
//! identifiers contain neither character is byte-identical to the article's format.

use crate::action::{Action, ActionType, FieldKind, FieldRef, FieldValue, ObjectiveAmount};

/// Separator between positional fields.
const SEPARATOR: char = '|';
/// Escape character for a separator or an escape inside a field.
const ESCAPE: char = '\\';

/// Builds and parses canonical action payloads.
pub struct ActionPayload;

/// Why a payload string does not parse as an action of the given type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("{action}: expected {expected} fields, found {found}")]
    FieldCount {
        action: ActionType,
        expected: ExpectedFields,
        found: usize,
    },
    #[error("{action}: byte {position}: a `\\` must be followed by `|` or `\\`")]
    BadEscape { action: ActionType, position: usize },
    #[error("{action}: field {field} is not a canonical whole number: `{value}`")]
    BadAmount {
        action: ActionType,
        field: usize,
        value: String,
    },
}

impl ActionPayload {
    /// The canonical payload of an authored action.
    pub fn build(action: &Action) -> String {
        let mut out = String::new();
        Self::build_into(action, &mut out);
        out
    }

    /// Like [`ActionPayload::build`], appending to a buffer the caller may reuse.
    ///
    /// The fields are the action's, in the order its declaration lists them (`action.rs`).
    pub fn build_into(action: &Action, out: &mut String) {
        let mut fields = Fields { out, first: true };
        action.for_each_field(|_, value| match value {
            FieldRef::Text(text) => fields.push(text),
            FieldRef::Maybe(text) => {
                if let Some(text) = text {
                    fields.push(text);
                }
            }
            FieldRef::Amount(amount) => {
                if let Some(ObjectiveAmount { amount, island }) = amount {
                    fields.push(&amount.to_string());
                    if let Some(island) = island {
                        fields.push(island);
                    }
                }
            }
        });
    }

    /// Parses a payload of the given type back into the action it was built from.
    ///
    /// Strict: only canonical payloads parse, so `build(parse(s)) == s` whenever parsing succeeds.
    /// The first bad escape wins, then the field count, then the amount.
    pub fn parse(action: ActionType, payload: &str) -> Result<Action, PayloadError> {
        let fields = split(action, payload)?;
        let spec = action.spec();
        let (min, max) = spec.payload_fields();
        let count_error = || PayloadError::FieldCount {
            action,
            expected: ExpectedFields { min, max },
            found: fields.len(),
        };
        if max == 0 {
            // The empty payload splits into one empty field.
            if fields.len() != 1 || !fields[0].is_empty() {
                return Err(count_error());
            }
        } else if !(min..=max).contains(&fields.len()) {
            return Err(count_error());
        }
        let mut values = Vec::with_capacity(spec.fields.len());
        let mut at = 0;
        for field in spec.fields {
            values.push(match field.kind {
                FieldKind::Ident | FieldKind::Target => {
                    at += 1;
                    FieldValue::Text(fields[at - 1].clone())
                }
                FieldKind::OptionalIdent => {
                    at += 1;
                    FieldValue::Maybe(fields.get(at - 1).cloned())
                }
                FieldKind::Amount => match fields.get(at) {
                    None => FieldValue::Amount(None),
                    Some(text) => {
                        let amount = parse_amount(text).ok_or_else(|| PayloadError::BadAmount {
                            action,
                            field: at + 1,
                            value: text.clone(),
                        })?;
                        let island = fields.get(at + 1).cloned();
                        at += 2;
                        FieldValue::Amount(Some(ObjectiveAmount { amount, island }))
                    }
                },
            });
        }
        Action::from_fields(action, values).ok_or_else(count_error)
    }
}

/// How many fields a payload of some type has, as an error states it: `3`, `1 or 2`, `2 to 4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpectedFields {
    pub min: usize,
    pub max: usize,
}

impl std::fmt::Display for ExpectedFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.max - self.min {
            0 => write!(f, "{}", self.min),
            1 => write!(f, "{} or {}", self.min, self.max),
            _ => write!(f, "{} to {}", self.min, self.max),
        }
    }
}

/// Appends escaped fields with separators between them.
struct Fields<'a> {
    out: &'a mut String,
    first: bool,
}

impl Fields<'_> {
    fn push(&mut self, field: &str) {
        if !self.first {
            self.out.push(SEPARATOR);
        }
        self.first = false;
        for c in field.chars() {
            if c == SEPARATOR || c == ESCAPE {
                self.out.push(ESCAPE);
            }
            self.out.push(c);
        }
    }
}

/// Splits on unescaped separators and removes the escapes.
fn split(action: ActionType, payload: &str) -> Result<Vec<String>, PayloadError> {
    let mut fields = vec![String::new()];
    let mut chars = payload.char_indices();
    while let Some((position, c)) = chars.next() {
        match c {
            SEPARATOR => fields.push(String::new()),
            ESCAPE => match chars.next() {
                Some((_, escaped @ (SEPARATOR | ESCAPE))) => {
                    if let Some(last) = fields.last_mut() {
                        last.push(escaped);
                    }
                }
                _ => return Err(PayloadError::BadEscape { action, position }),
            },
            c => {
                if let Some(last) = fields.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    Ok(fields)
}

/// A decimal `u32` from 1 up, without sign or leading zeros, so only one spelling of each amount
/// parses, and an amount of 0 (which content refuses) never does.
fn parse_amount(text: &str) -> Option<u32> {
    let canonical =
        !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && !text.starts_with('0');
    if canonical { text.parse().ok() } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> String {
        x.to_owned()
    }

    #[test]
    fn check_quest_is_the_articles_format() {
        let action = Action::CheckQuest {
            quest_id: s("MarksColdCall"),
            success_node: s("MarksColdCall_Done"),
            failure_node: s("MarksColdCall_NotYet"),
        };
        assert_eq!(
            ActionPayload::build(&action),
            "MarksColdCall|MarksColdCall_Done|MarksColdCall_NotYet"
        );
    }

    #[test]
    fn advance_objective_writes_the_amount_when_an_island_is_named() {
        let plain = Action::AdvanceObjective {
            quest_id: s("Q"),
            objective_id: s("O"),
            amount: None,
        };
        assert_eq!(ActionPayload::build(&plain), "Q|O");
        let on_island = Action::AdvanceObjective {
            quest_id: s("Q"),
            objective_id: s("O"),
            amount: Some(ObjectiveAmount {
                amount: 1,
                island: Some(s("Winterspire")),
            }),
        };
        assert_eq!(ActionPayload::build(&on_island), "Q|O|1|Winterspire");
    }

    #[test]
    fn separators_inside_identifiers_are_escaped() {
        let action = Action::CheckQuest {
            quest_id: s("a|b"),
            success_node: s("c\\"),
            failure_node: s("|"),
        };
        let built = ActionPayload::build(&action);
        assert_eq!(built, "a\\|b|c\\\\|\\|");
        assert_eq!(
            ActionPayload::parse(ActionType::CheckQuest, &built),
            Ok(action)
        );
    }

    #[test]
    fn malformed_payloads_are_typed_errors() {
        assert!(matches!(
            ActionPayload::parse(ActionType::CheckQuest, "a|b"),
            Err(PayloadError::FieldCount { found: 2, .. })
        ));
        assert!(matches!(
            ActionPayload::parse(ActionType::AcceptQuest, "a\\"),
            Err(PayloadError::BadEscape { position: 1, .. })
        ));
        assert!(matches!(
            ActionPayload::parse(ActionType::AdvanceObjective, "q|o|01"),
            Err(PayloadError::BadAmount { .. })
        ));
        assert!(matches!(
            ActionPayload::parse(ActionType::AdvanceObjective, "q|o|99999999999"),
            Err(PayloadError::BadAmount { .. })
        ));
        assert!(ActionPayload::parse(ActionType::OpenSellMenu, "x").is_err());
        assert_eq!(
            ActionPayload::parse(ActionType::OpenSellMenu, ""),
            Ok(Action::OpenSellMenu)
        );
    }
}
