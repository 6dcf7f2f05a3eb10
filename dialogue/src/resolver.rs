//! The QuestlineResolver (article section 5), pure: where a conversation with an NPC opens for a
//! player, given the status of each quest. The server calls it for every `talk`; `check-content`
//! calls it for every reachable combination of an NPC's quest states to prove it total.

use std::collections::HashMap;

use crate::condition::QuestStatus;
use crate::content::{Content, QuestDef, QuestKind};

/// The node an NPC opens on when it has nothing left to offer.
pub const ALL_DONE: &str = "AllDone";

/// The quests `npc_id` gives, story quests first, otherwise in the order of quests.json. Reads
/// only that NPC's quests ([`Content::quests_of`]): the server asks on every `talk`.
pub fn offered<'c>(content: &'c Content, npc_id: &str) -> Vec<&'c QuestDef> {
    let mut offered = content.quests_of(npc_id);
    // A stable sort: the order of quests.json holds within each kind.
    offered.sort_by_key(|q| q.kind != QuestKind::Story);
    offered
}

/// [`offered`] for every giver at once, in one pass over the quests (a check that asks for every
/// NPC must not scan every quest per NPC).
pub fn offered_by_giver(content: &Content) -> HashMap<&str, Vec<&QuestDef>> {
    let mut by_giver: HashMap<&str, Vec<&QuestDef>> = HashMap::new();
    for quest in &content.quests {
        by_giver
            .entry(quest.giver.as_str())
            .or_default()
            .push(quest);
    }
    for offered in by_giver.values_mut() {
        offered.sort_by_key(|q| q.kind != QuestKind::Story);
    }
    by_giver
}

/// Where a conversation with `npc_id` opens. In order: an active quest from this NPC opens on its
/// check node (story quests before the rest); else the `tracked` quest, if this NPC offers it
/// and it is available, opens on its greeting; else the first available quest's greeting; else
/// [`ALL_DONE`]; an NPC with no quests uses the conversation's `first_node`.
pub fn resolve_entry<'c>(
    content: &'c Content,
    npc_id: &str,
    first_node: Option<&'c str>,
    tracked: Option<&str>,
    status: impl Fn(&QuestDef) -> QuestStatus,
) -> Option<&'c str> {
    resolve_among(&offered(content, npc_id), first_node, tracked, status)
}

/// [`resolve_entry`] over the NPC's quests as [`offered`] lists them: the one rule, for callers
/// that hold that list already (`check-content` proves every NPC's resolver total with it).
pub fn resolve_among<'c>(
    offered: &[&'c QuestDef],
    first_node: Option<&'c str>,
    tracked: Option<&str>,
    status: impl Fn(&QuestDef) -> QuestStatus,
) -> Option<&'c str> {
    if offered.is_empty() {
        return first_node;
    }
    if let Some(active) = offered.iter().find(|q| status(q) == QuestStatus::Active) {
        return Some(&active.nodes.check);
    }
    if let Some(tracked) = tracked
        && let Some(q) = offered
            .iter()
            .find(|q| q.id == tracked && status(q) == QuestStatus::Available)
    {
        return Some(&q.nodes.greeting);
    }
    if let Some(available) = offered.iter().find(|q| status(q) == QuestStatus::Available) {
        return Some(&available.nodes.greeting);
    }
    Some(ALL_DONE)
}

/// The available cutscene quest whose greeting `entry` is, if any: talking to its giver opens no
/// conversation, the quest is accepted and its scene plays (article section 5).
pub fn cutscene_offer<'c>(
    content: &'c Content,
    npc_id: &str,
    entry: &str,
    status: impl Fn(&QuestDef) -> QuestStatus,
) -> Option<&'c QuestDef> {
    offered(content, npc_id).into_iter().find(|q| {
        q.cutscene.is_some() && q.nodes.greeting == entry && status(q) == QuestStatus::Available
    })
}
