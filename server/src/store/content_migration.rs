//! A content migration as the store applies it (`Store::apply_migration`): the types of
//! `content/migrations.json`, which `migrations.rs` reads and checks against what players hold.
//! They live with the store that applies them, so the store names nothing above it.

use std::collections::BTreeMap;

use serde::Deserialize;

/// One migration.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct ContentMigration {
    pub id: String,
    /// Old quest id → new quest id.
    #[serde(default)]
    pub rename_quests: BTreeMap<String, String>,
    /// Quest id (after the quest renames) → old objective id → new objective id.
    #[serde(default)]
    pub rename_objectives: BTreeMap<String, BTreeMap<String, String>>,
    /// Quest id → what happens where it is still active.
    #[serde(default)]
    pub remove_quests: BTreeMap<String, Removal>,
}

/// What a removed quest becomes for a player who has it active.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Removal {
    /// Forgotten: its state and progress are deleted.
    Abandon,
    /// Completed, with no reward.
    Complete,
    /// Completed and paid this reward, once (the ledger's key).
    Pay(Reward),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct Reward {
    #[serde(default)]
    pub coins: u32,
    #[serde(default)]
    pub experience: u32,
}
