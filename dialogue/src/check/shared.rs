//! A shared conversation's rules (docs/CONTENT.md, "Shared conversations"), checked on the
//! merged conversation: what the reader cannot see in one key alone.
//!
//! - `TimeLimit` with `Mode` `Leader` or `All` (neither waits for a time limit), and `Tie` with
//!   any `Mode` but `Majority` (only a majority ties), on `Shared` or a node's `Choice`;
//! - a node's `Choice` in a conversation whose base file says no `Shared`, or on a node without
//!   responses;
//! - in a shared conversation, a response with `Conditions` that carries a `CheckQuest`: the
//!   group's next line waits for the leader's check (PROTOCOL.md section 17.2), which is armed
//!   only for a participant the response was shown to.
//!
//! A `Shared` in a layer file is reported by the layer union (`layers.rs`), unknown keys and
//! values by the reader (`json.rs`).

use banter_protocol::{ActionType, ChoiceMode};

use super::conversation::ConversationCheck;
use crate::canonical::{CHOICE, SHARED};
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{ChoiceSpec, Exit};

/// Said after a node's `Choice` problem when the `Choice` names no `Mode` of its own.
const WHOLE_RULE: &str =
    "; a node's `Choice` is a whole rule and takes no key from `Shared`: say its `Mode`";

impl ConversationCheck<'_, '_> {
    pub(super) fn shared(&mut self) {
        let conversation = self.conversation;
        let mut found = Vec::new();
        if let Some(spec) = &conversation.shared {
            for (field, problem) in combination(spec, "") {
                found.push(
                    Diagnostic::error(self.base_file(), problem).field(format!("{SHARED}.{field}")),
                );
            }
        }
        for (name, node) in &conversation.nodes {
            let file = || self.file(name);
            if let Some(spec) = &node.choice {
                let at = |d: Diagnostic, field: &str| d.node(name).field(field.to_owned());
                if conversation.shared.is_none() {
                    found.push(at(
                        Diagnostic::error(file(), Problem::ChoiceNotShared),
                        CHOICE,
                    ));
                }
                if !matches!(&node.exit, Exit::Responses(r) if !r.is_empty()) {
                    found.push(at(
                        Diagnostic::error(file(), Problem::ChoiceWithoutResponses),
                        CHOICE,
                    ));
                }
                let hint = if spec.mode.is_none() { WHOLE_RULE } else { "" };
                for (field, problem) in combination(spec, hint) {
                    found.push(at(
                        Diagnostic::error(file(), problem),
                        &format!("{CHOICE}.{field}"),
                    ));
                }
            }
            let (Some(_), Exit::Responses(responses)) = (&conversation.shared, &node.exit) else {
                continue;
            };
            for (i, response) in responses.iter().enumerate() {
                if response.conditions.is_none() {
                    continue;
                }
                for (k, action) in response.actions.iter().enumerate() {
                    if action.action_type() == ActionType::CheckQuest {
                        found.push(
                            Diagnostic::error(file(), Problem::ConditionalCheckInShared)
                                .node(name)
                                .field(format!("Responses[{}].Actions[{}]", i + 1, k + 1)),
                        );
                    }
                }
            }
        }
        self.out.extend(found);
    }
}

/// The keys of `spec` its `Mode` cannot take: `TimeLimit` unless `Majority` or `Roll`, `Tie`
/// unless `Majority`. Each with its problem; `hint` is appended to the message.
fn combination(spec: &ChoiceSpec, hint: &'static str) -> Vec<(&'static str, Problem)> {
    let mode = spec.mode.unwrap_or_default();
    let name: &'static str = mode.into();
    let mut problems = Vec::new();
    if spec.time_limit.is_some() && matches!(mode, ChoiceMode::Leader | ChoiceMode::All) {
        problems.push(("TimeLimit", Problem::TimeLimitWithoutTimer(name, hint)));
    }
    if spec.tie.is_some() && mode != ChoiceMode::Majority {
        problems.push(("Tie", Problem::TieWithoutMajority(name, hint)));
    }
    problems
}
