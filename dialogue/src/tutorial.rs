//! The tutorial: which NPC the intro points at, and what every other NPC says meanwhile.
//!
//! One pure function, [`pointed_npc`], decides the NPC the tutorial points at for a stage. The
//! server uses it to pick who talks normally (everyone else opens on the stage's lockout node)
//! and a client uses the same function to decide which prompt to show, so the two cannot drift
//! apart. Driven by `content/tutorial.json`; without that file there is no tutorial.
//!
//! ```json
//! { "Stages": [ { "Stage": 1, "PointsAt": "marisol", "Lockout": "Tutorial_Stage1",
//!                 "Until": { "Completed": "FirstCatch" } } ] }
//! ```
//!
//! A profile's `tutorial_stage` is 0 until the game starts the intro ([`first_stage`]; the
//! trusted game server reports it as a `tutorial_started` event). A stage ends when its `Until`
//! holds (a quest accepted or completed, through the conversation the tutorial points at):
//! [`stage_after`] says where the profile moves, and past the last stage it leaves the tutorial.

use serde::{Deserialize, Serialize};

use crate::condition::QuestStatus;
use crate::content::Content;

/// `tutorial.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct TutorialDef {
    pub stages: Vec<TutorialStage>,
}

/// One stage of the intro.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct TutorialStage {
    /// The profile's `tutorial_stage` this entry applies to (1 and up).
    pub stage: i64,
    /// The NPC instance id the tutorial points at; it resolves its entry normally.
    pub points_at: String,
    /// The lockout node every other NPC opens on during this stage.
    pub lockout: String,
    /// What ends the stage; a stage without one lasts until the game moves the profile on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<StageEnd>,
}

/// What ends a tutorial stage: `{ "Accepted": "QuestId" }` or `{ "Completed": "QuestId" }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub enum StageEnd {
    /// The quest is active or completed.
    Accepted(String),
    /// The quest is completed.
    Completed(String),
}

impl StageEnd {
    /// The quest it names.
    pub fn quest(&self) -> &str {
        match self {
            StageEnd::Accepted(q) | StageEnd::Completed(q) => q,
        }
    }

    fn holds(&self, status: QuestStatus) -> bool {
        match self {
            StageEnd::Accepted(_) => {
                matches!(status, QuestStatus::Active | QuestStatus::Completed)
            }
            StageEnd::Completed(_) => status == QuestStatus::Completed,
        }
    }
}

/// The stage a profile enters when the intro starts: the lowest stage, or `None` without a
/// tutorial.
pub fn first_stage(content: &Content) -> Option<i64> {
    content
        .tutorial
        .as_ref()?
        .stages
        .iter()
        .map(|s| s.stage)
        .min()
}

/// Where a profile at `stage` moves, given its quests' statuses: past every stage whose `Until`
/// already holds (one action can end several), to the next stage by number, or past the last
/// stage to `last + 1`, which is outside the tutorial. `None` when it stays where it is (no
/// tutorial, stage 0, outside the stages, or the stage's end does not hold yet).
pub fn stage_after(
    content: &Content,
    stage: i64,
    status: impl Fn(&str) -> QuestStatus,
) -> Option<i64> {
    let tutorial = content.tutorial.as_ref()?;
    let mut current = stage;
    // Each round moves strictly upwards through a finite list, so this ends.
    while let Some(def) = self::stage(content, current) {
        let Some(until) = &def.until else { break };
        if !until.holds(status(until.quest())) {
            break;
        }
        current = tutorial
            .stages
            .iter()
            .map(|s| s.stage)
            .filter(|&s| s > current)
            .min()
            .unwrap_or(current + 1);
    }
    (current != stage).then_some(current)
}

/// The stage definition for a profile's tutorial stage; `None` outside the tutorial (stage 0,
/// past the last stage, or no tutorial in this content).
pub fn stage(content: &Content, stage: i64) -> Option<&TutorialStage> {
    content
        .tutorial
        .as_ref()?
        .stages
        .iter()
        .find(|s| s.stage == stage)
}

/// The NPC the tutorial points at during `stage`, or `None` outside the tutorial.
pub fn pointed_npc(content: &Content, stage: i64) -> Option<&str> {
    self::stage(content, stage).map(|s| s.points_at.as_str())
}

/// The lockout node `npc_id` opens on during `stage`: `None` for the pointed NPC and outside the
/// tutorial.
pub fn lockout_entry<'c>(content: &'c Content, stage: i64, npc_id: &str) -> Option<&'c str> {
    let stage = self::stage(content, stage)?;
    (stage.points_at != npc_id).then_some(stage.lockout.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::condition::QuestStatus::{Active, Available, Completed};

    fn content(stages: &str) -> Content {
        let tutorial: TutorialDef = serde_json::from_str(stages).expect("tutorial json");
        Content {
            tutorial: Some(tutorial),
            ..Content::default()
        }
    }

    const STAGES: &str = r#"{ "Stages": [
        { "Stage": 1, "PointsAt": "a", "Lockout": "L1", "Until": { "Accepted": "Q" } },
        { "Stage": 2, "PointsAt": "a", "Lockout": "L2", "Until": { "Completed": "Q" } },
        { "Stage": 5, "PointsAt": "b", "Lockout": "L5", "Until": { "Completed": "R" } } ] }"#;

    #[test]
    fn stages_end_when_their_quest_moves_and_the_last_leaves_the_tutorial() {
        let c = content(STAGES);
        assert_eq!(first_stage(&c), Some(1));
        let q =
            |q_status, r_status| move |quest: &str| if quest == "Q" { q_status } else { r_status };
        assert_eq!(stage_after(&c, 1, q(Available, Available)), None);
        assert_eq!(stage_after(&c, 1, q(Active, Available)), Some(2));
        // Accepting and completing in one go ends both stages; numbering may skip.
        assert_eq!(stage_after(&c, 1, q(Completed, Available)), Some(5));
        assert_eq!(stage_after(&c, 5, q(Completed, Completed)), Some(6));
        assert_eq!(pointed_npc(&c, 6), None, "past the last stage is outside");
        // Stage 0 (not started) and stages outside the list never move.
        assert_eq!(stage_after(&c, 0, q(Completed, Completed)), None);
        assert_eq!(stage_after(&c, 6, q(Completed, Completed)), None);
    }

    #[test]
    fn a_stage_without_an_end_stays_and_no_tutorial_means_no_stage() {
        let c = content(r#"{ "Stages": [ { "Stage": 1, "PointsAt": "a", "Lockout": "L" } ] }"#);
        assert_eq!(stage_after(&c, 1, |_| Completed), None);
        assert_eq!(first_stage(&Content::default()), None);
        assert_eq!(stage_after(&Content::default(), 1, |_| Completed), None);
    }
}
