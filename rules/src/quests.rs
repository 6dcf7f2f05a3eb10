//! A quest's status for a player, from what the player accepted and the content's definitions.
//!
//! The server derives it from its store, a client from the effects it was sent; both call
//! [`quest_status`], so they cannot disagree about when a quest becomes available.

use banter_dialogue::content::{Content, QuestDef};
use banter_protocol::QuestStatus;

/// What a player holds of a quest they accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// Accepted and not handed in.
    Active,
    /// Handed in and paid.
    Completed,
}

/// A quest's status: `active` or `completed` once accepted; before that `available` when every
/// prerequisite is completed, else `unavailable` (an unknown quest is `unavailable`).
/// `accepted` says what the player holds of any quest.
pub fn quest_status(
    content: &Content,
    quest: &str,
    accepted: impl Fn(&str) -> Option<Accepted>,
) -> QuestStatus {
    match accepted(quest) {
        Some(Accepted::Active) => QuestStatus::Active,
        Some(Accepted::Completed) => QuestStatus::Completed,
        None => match content.quest(quest) {
            Some(def)
                if def
                    .prerequisites
                    .iter()
                    .all(|p| accepted(p) == Some(Accepted::Completed)) =>
            {
                QuestStatus::Available
            }
            _ => QuestStatus::Unavailable,
        },
    }
}

/// True if every objective of `quest` has reached its target; `progress` gives an objective's
/// progress by id.
pub fn objectives_done(quest: &QuestDef, progress: impl Fn(&str) -> u32) -> bool {
    quest.objectives.iter().all(|o| progress(&o.id) >= o.target)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn quest(id: &str, prerequisites: &[&str]) -> QuestDef {
        QuestDef::minimal(id, prerequisites)
    }

    #[test]
    fn accepted_quests_say_so_and_the_rest_follow_their_prerequisites() {
        let content = Content {
            quests: vec![quest("A", &[]), quest("B", &["A"]), quest("C", &["A", "B"])],
            ..Content::default()
        };
        let mut held: HashMap<&str, Accepted> = HashMap::new();
        let status = |held: &HashMap<&str, Accepted>, q: &str| {
            quest_status(&content, q, |p| held.get(p).copied())
        };
        assert_eq!(status(&held, "A"), QuestStatus::Available);
        assert_eq!(status(&held, "B"), QuestStatus::Unavailable);
        assert_eq!(status(&held, "Nope"), QuestStatus::Unavailable);
        held.insert("A", Accepted::Active);
        assert_eq!(status(&held, "A"), QuestStatus::Active);
        assert_eq!(
            status(&held, "B"),
            QuestStatus::Unavailable,
            "A is not completed"
        );
        held.insert("A", Accepted::Completed);
        assert_eq!(status(&held, "B"), QuestStatus::Available);
        assert_eq!(status(&held, "C"), QuestStatus::Unavailable);
    }

    #[test]
    fn objectives_are_done_at_their_targets() {
        let q = quest("A", &[]);
        assert!(!objectives_done(&q, |_| 2));
        assert!(objectives_done(&q, |_| 3));
    }
}
