//! The tutorial: which NPC the intro points at, and what every other NPC says meanwhile.
//!
//! One pure function, [`pointed_npc`], decides the NPC the tutorial points at for a stage. The
//! server uses it to pick who talks normally (everyone else opens on the stage's lockout node)
//! and a client uses the same function to decide which prompt to show, so the two cannot drift
//! apart. Driven by `content/tutorial.json`; without that file there is no tutorial.
//!
//! ```json
//! { "Stages": [ { "Stage": 1, "PointsAt": "marisol", "Lockout": "Tutorial_Stage1" } ] }
//! ```

use serde::{Deserialize, Serialize};

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
