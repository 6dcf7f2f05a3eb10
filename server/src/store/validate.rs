//! Argument checks every backend makes before any database work, and the one check of a value
//! read back.

use super::{
    Change, MAX_AMOUNT, MAX_EVENT_ID_LEN, MAX_ID_LEN, MAX_REWARD, MAX_STEP_KEY_LEN,
    ObjectiveAdvance, Step, StoreError, VisitDelta,
};

pub(crate) fn check_id(what: &str, value: &str) -> Result<(), StoreError> {
    check_len(what, value, MAX_ID_LEN)
}

pub(crate) fn check_event_id(value: &str) -> Result<(), StoreError> {
    check_len("event id", value, MAX_EVENT_ID_LEN)
}

fn check_len(what: &str, value: &str, max: usize) -> Result<(), StoreError> {
    if value.is_empty() {
        return Err(StoreError::InvalidInput(format!("{what} is empty")));
    }
    if value.len() > max {
        return Err(StoreError::InvalidInput(format!(
            "{what} is longer than {max} bytes"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(StoreError::InvalidInput(format!(
            "{what} contains a control character"
        )));
    }
    Ok(())
}

/// Validates a batch of advances before any database work. Returns the order in which to apply
/// them: sorted by (quest, objective) so that concurrent batches take row locks in the same order.
pub(crate) fn check_advances(
    player: &str,
    event_id: Option<&str>,
    advances: &[ObjectiveAdvance],
) -> Result<Vec<usize>, StoreError> {
    check_id("player id", player)?;
    if let Some(event_id) = event_id {
        check_event_id(event_id)?;
    }
    if advances.is_empty() && event_id.is_none() {
        return Err(StoreError::InvalidInput("no objective to advance".into()));
    }
    for advance in advances {
        check_id("quest id", &advance.quest)?;
        check_id("objective id", &advance.objective)?;
        if advance.amount == 0 || advance.amount > MAX_AMOUNT {
            return Err(StoreError::InvalidAmount {
                amount: advance.amount,
            });
        }
        if advance.target == 0 {
            return Err(StoreError::InvalidInput(format!(
                "objective {:?} of quest {:?} has target 0",
                advance.objective, advance.quest
            )));
        }
    }
    let mut order: Vec<usize> = (0..advances.len()).collect();
    order.sort_by(|&a, &b| {
        (&advances[a].quest, &advances[a].objective)
            .cmp(&(&advances[b].quest, &advances[b].objective))
    });
    Ok(order)
}

/// Validates a step before any database work: its player, key and change, as the change's own
/// method would. Returns the order in which to apply its advances (see [`check_advances`]).
pub(crate) fn check_step(step: &Step<'_>) -> Result<Vec<usize>, StoreError> {
    check_id("player id", step.player)?;
    check_len("step key", step.key, MAX_STEP_KEY_LEN)?;
    check_len("audit message", step.message, MAX_ID_LEN)?;
    if let Some(tutorial) = step.tutorial
        && (tutorial.from < 0 || tutorial.to < 0)
    {
        return Err(StoreError::InvalidInput(format!(
            "tutorial stage {} to {} is negative",
            tutorial.from, tutorial.to
        )));
    }
    match step.change {
        Change::Accept { quest, objectives } => {
            check_id("quest id", quest)?;
            check_objectives(objectives)?;
            Ok(Vec::new())
        }
        Change::Advance { event_id, advances } => check_advances(step.player, event_id, advances),
        Change::Complete {
            quest,
            coins,
            experience,
            advances,
        } => {
            check_id("quest id", quest)?;
            check_reward(coins, experience)?;
            if advances.is_empty() {
                return Ok(Vec::new());
            }
            check_advances(step.player, None, advances)
        }
        Change::Track { quest } => {
            if let Some(quest) = quest {
                check_id("quest id", quest)?;
            }
            Ok(Vec::new())
        }
        Change::Abandon { quest } => {
            check_id("quest id", quest)?;
            Ok(Vec::new())
        }
        Change::Profile => Ok(Vec::new()),
        Change::SetVariable { name, value } => {
            check_id("variable name", name)?;
            check_variable_value(value)?;
            Ok(Vec::new())
        }
    }
}

/// A story variable's stored text: at most [`MAX_ID_LEN`] bytes (a declared string is at most
/// 64), no NUL (which PostgreSQL's text refuses). Empty is allowed.
pub(crate) fn check_variable_value(value: &str) -> Result<(), StoreError> {
    if value.len() > MAX_ID_LEN {
        return Err(StoreError::InvalidInput(format!(
            "variable value is longer than {MAX_ID_LEN} bytes"
        )));
    }
    if value.contains('\0') {
        return Err(StoreError::InvalidInput(
            "variable value contains a NUL character".into(),
        ));
    }
    Ok(())
}

/// Validates [`Store::record_visits`](super::Store::record_visits)'s arguments before any
/// database work.
pub(crate) fn check_visits(
    player: &str,
    conversation: &str,
    visits: &[VisitDelta],
) -> Result<(), StoreError> {
    check_id("player id", player)?;
    check_id("conversation id", conversation)?;
    for visit in visits {
        check_id("node id", &visit.node)?;
        if i64::try_from(visit.last).is_err() {
            return Err(StoreError::InvalidInput(format!(
                "last visit {} of node {:?} is above {}",
                visit.last,
                visit.node,
                i64::MAX
            )));
        }
    }
    Ok(())
}

pub(crate) fn check_reward(coins: i64, experience: i64) -> Result<(), StoreError> {
    for (what, value) in [("coins", coins), ("experience", experience)] {
        if !(0..=MAX_REWARD).contains(&value) {
            return Err(StoreError::InvalidInput(format!(
                "reward {what} {value} is out of range 0..={MAX_REWARD}"
            )));
        }
    }
    Ok(())
}

pub(crate) fn check_objectives(objectives: &[String]) -> Result<(), StoreError> {
    let mut seen = std::collections::BTreeSet::new();
    for objective in objectives {
        check_id("objective id", objective)?;
        if !seen.insert(objective.as_str()) {
            return Err(StoreError::InvalidInput(format!(
                "objective {objective:?} is listed twice"
            )));
        }
    }
    Ok(())
}

pub(crate) fn progress_from_db(
    quest: &str,
    objective: &str,
    value: i64,
) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| {
        StoreError::Corrupt(format!(
            "progress {value} of objective {objective:?} of quest {quest:?} is out of range"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_and_visits_are_validated() {
        let set = |name, value| Step {
            player: "p",
            key: "k",
            conversation: None,
            message: "action",
            detail: None,
            recorded_us: 0,
            change: Change::SetVariable { name, value },
            tutorial: None,
        };
        let (longest, too_long) = ("x".repeat(MAX_ID_LEN), "x".repeat(MAX_ID_LEN + 1));
        assert!(check_step(&set("Mood", "")).is_ok());
        assert!(check_step(&set("Mood", &longest)).is_ok());
        for (name, value) in [
            ("", "v"),
            ("Mo\nod", "v"),
            ("Mood", "a\0b"),
            ("Mood", too_long.as_str()),
        ] {
            assert!(
                matches!(
                    check_step(&set(name, value)),
                    Err(StoreError::InvalidInput(_))
                ),
                "{name:?} {value:?}"
            );
        }
        let delta = |node: &str, last| VisitDelta {
            node: node.into(),
            added: 1,
            last,
        };
        let top = i64::MAX as u64;
        assert!(check_visits("p", "c", &[]).is_ok());
        assert!(check_visits("p", "c", &[delta("n", top)]).is_ok());
        for (player, conversation, visits) in [
            ("", "c", vec![]),
            ("p", "", vec![]),
            ("p", "c", vec![delta("", 0)]),
            ("p", "c", vec![delta("n", top + 1)]),
        ] {
            assert!(
                matches!(
                    check_visits(player, conversation, &visits),
                    Err(StoreError::InvalidInput(_))
                ),
                "{player:?} {conversation:?} {visits:?}"
            );
        }
    }

    #[test]
    fn advances_are_validated_and_ordered() {
        let adv = |q: &str, o: &str, amount, target| ObjectiveAdvance {
            quest: q.into(),
            objective: o.into(),
            amount,
            target,
        };
        let order = check_advances("p", None, &[adv("b", "x", 1, 1), adv("a", "y", 1, 1)]);
        assert_eq!(order.ok(), Some(vec![1, 0]));
        assert!(matches!(
            check_advances("p", None, &[adv("a", "x", 0, 1)]),
            Err(StoreError::InvalidAmount { amount: 0 })
        ));
        assert!(matches!(
            check_advances("p", None, &[adv("a", "x", MAX_AMOUNT + 1, 1)]),
            Err(StoreError::InvalidAmount { .. })
        ));
        assert!(matches!(
            check_advances("p", None, &[adv("a", "x", 1, 0)]),
            Err(StoreError::InvalidInput(_))
        ));
        assert!(matches!(
            check_advances("", None, &[adv("a", "x", 1, 1)]),
            Err(StoreError::InvalidInput(_))
        ));
        assert!(matches!(
            check_advances("p", Some(""), &[]),
            Err(StoreError::InvalidInput(_))
        ));
        assert!(matches!(
            check_advances("p", None, &[]),
            Err(StoreError::InvalidInput(_))
        ));
    }
}
