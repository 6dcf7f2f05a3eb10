//! What the client believes about its player: the [`FactSheet`] from the last `opened`, kept
//! current from every `effect` (docs/PROTOCOL.md section 10), and the profile.
//!
//! The one fact the sheet cannot carry, which quests become available when a prerequisite is
//! completed, comes from the quest definitions in the content folder the client loaded. Those
//! derived statuses are kept beside the sheet, not in it: the sheet stays the size of what the
//! server sent (the quests the player holds and those the open conversation's conditions name),
//! so the copy a walk takes of it per line costs the conversation's size, not the world's.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

use banter_dialogue::content::{Content, QuestDef};
use banter_protocol::{Effect, FactSheet, Profile, QuestStatus};

/// The client's copy of the player's facts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientFacts {
    pub sheet: FactSheet,
    pub profile: Profile,
    /// Where the quests available at the last unlock sit in the content's quest list.
    available: Overlay<usize>,
    /// The quests the shared rule makes unavailable (their prerequisites are not completed),
    /// by id. The sheet holds such a status only for a quest the server named.
    unavailable: Overlay<String>,
}

/// A set as large as the world's quests that every player of a run starts from (what a fresh
/// player's prerequisites give), shared, with this player's changes beside it: a bot's facts
/// are copied from the fresh ones in O(1) and grow with what it did, not with the world.
#[derive(Clone, Debug)]
struct Overlay<T: Hash + Eq> {
    base: Arc<HashSet<T>>,
    added: HashSet<T>,
    removed: HashSet<T>,
}

/// Equal when they hold the same items, however those are split between base and changes.
impl<T: Hash + Eq + Clone> PartialEq for Overlay<T> {
    fn eq(&self, other: &Self) -> bool {
        let mine: HashSet<&T> = self.iter().collect();
        let theirs: HashSet<&T> = other.iter().collect();
        mine == theirs
    }
}

impl<T: Hash + Eq> Default for Overlay<T> {
    fn default() -> Self {
        Overlay {
            base: Arc::default(),
            added: HashSet::new(),
            removed: HashSet::new(),
        }
    }
}

impl<T: Hash + Eq + Clone> Overlay<T> {
    fn contains<Q>(&self, item: &Q) -> bool
    where
        T: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.added.contains(item) || (!self.removed.contains(item) && self.base.contains(item))
    }

    fn insert(&mut self, item: &T) {
        self.removed.remove(item);
        if !self.base.contains(item) && !self.added.contains(item) {
            self.added.insert(item.clone());
        }
    }

    fn remove(&mut self, item: &T) {
        self.added.remove(item);
        if self.base.contains(item) && !self.removed.contains(item) {
            self.removed.insert(item.clone());
        }
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        (self.base.iter())
            .filter(|item| !self.removed.contains(*item))
            .chain(self.added.iter())
    }

    /// Makes what the set holds now its shared base (done once, for the fresh facts).
    fn freeze(&mut self) {
        let mut all: HashSet<T> = self.iter().cloned().collect();
        all.shrink_to_fit();
        *self = Overlay {
            base: Arc::new(all),
            ..Overlay::default()
        };
    }
}

/// The parts of the facts a cheat must not change (not the live `has` tags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub quests: std::collections::BTreeMap<String, QuestStatus>,
    pub progress: std::collections::BTreeMap<String, u32>,
    pub coins: i64,
    pub experience: i64,
    pub tutorial_stage: i64,
}

impl From<&FactSheet> for Snapshot {
    fn from(sheet: &FactSheet) -> Snapshot {
        Snapshot {
            quests: sheet.quests.clone(),
            progress: sheet.progress.clone(),
            coins: sheet.coins,
            experience: sheet.experience,
            tutorial_stage: sheet.tutorial_stage,
        }
    }
}

/// The quests a sheet says the player holds (accepted or completed), with their status.
fn held(sheet: &FactSheet) -> std::collections::BTreeMap<&str, QuestStatus> {
    sheet
        .quests
        .iter()
        .filter(|(_, s)| matches!(s, QuestStatus::Active | QuestStatus::Completed))
        .map(|(q, s)| (q.as_str(), *s))
        .collect()
}

impl ClientFacts {
    /// The facts of a player who has done nothing yet: quests with prerequisites unavailable.
    /// Computed once per content: its copies ([`Clone`]) share what it worked out.
    pub fn fresh(content: &Content) -> ClientFacts {
        let mut facts = ClientFacts::default();
        facts.unlock(content);
        facts.available.freeze();
        facts.unavailable.freeze();
        facts
    }

    /// Where the quests available at the last unlock sit in the content's quest list
    /// (unordered): a player's next quest is among these and its active ones.
    pub fn available(&self) -> impl Iterator<Item = usize> + '_ {
        self.available.iter().copied()
    }

    /// A quest's status: the sheet's, else the one its prerequisites give it (available unless
    /// one is not completed).
    pub fn status(&self, quest: &str) -> QuestStatus {
        match self.sheet.quests.get(quest) {
            Some(status) => *status,
            None if self.unavailable.contains(quest) => QuestStatus::Unavailable,
            None => QuestStatus::Available,
        }
    }

    /// An objective's progress.
    pub fn progress(&self, quest: &str, objective: &str) -> u32 {
        self.sheet
            .progress
            .get(&format!("{quest}/{objective}"))
            .copied()
            .unwrap_or(0)
    }

    /// True if every objective of `quest` has reached its target (the shared rule).
    pub fn objectives_done(&self, quest: &QuestDef) -> bool {
        banter_rules::objectives_done(quest, |o| self.progress(&quest.id, o))
    }

    /// A new conversation opened with the server's current facts. The sheet names only the
    /// quests the player holds and those the conversation's conditions name; every other
    /// quest's status follows from the shared rule, as after a completion.
    pub fn opened(&mut self, content: &Content, sheet: &FactSheet) {
        let before = std::mem::replace(&mut self.sheet, sheet.clone());
        // Only what the held quests' changes touch is worked out again (a walk of the whole
        // world's quests per conversation would cost a bot more than the server's answer).
        let (old, new) = (held(&before), held(&self.sheet));
        let changed: Vec<String> = old
            .keys()
            .chain(new.keys())
            .filter(|q| old.get(*q) != new.get(*q))
            .map(|q| (*q).to_owned())
            .collect();
        self.unlock_after(content, &changed);
        self.profile.coins = sheet.coins;
        self.profile.experience = sheet.experience;
        self.profile.tutorial_stage = sheet.tutorial_stage;
    }

    /// The profile carried by a `welcome` or an `effect`.
    pub fn set_profile(&mut self, profile: &Profile) {
        self.profile = profile.clone();
        self.sheet.coins = profile.coins;
        self.sheet.experience = profile.experience;
        self.sheet.tutorial_stage = profile.tutorial_stage;
    }

    /// Applies an `effect` and the profile it carried.
    pub fn apply(&mut self, content: &Content, effect: &Effect, profile: &Profile) {
        self.set_profile(profile);
        match effect {
            Effect::QuestAccepted { quest, objectives } => {
                self.sheet.quests.insert(quest.clone(), QuestStatus::Active);
                // The effect names the objectives: no quest definition needed.
                for objective in objectives {
                    self.sheet
                        .progress
                        .entry(format!("{quest}/{objective}"))
                        .or_insert(0);
                }
            }
            Effect::ObjectiveAdvanced {
                quest,
                objective,
                progress,
                ..
            } => {
                self.sheet
                    .progress
                    .insert(format!("{quest}/{objective}"), *progress);
            }
            Effect::QuestCompleted { quest, .. } => {
                self.sheet
                    .quests
                    .insert(quest.clone(), QuestStatus::Completed);
                if let Some(def) = content.quest(quest) {
                    for o in &def.objectives {
                        let p = self
                            .sheet
                            .progress
                            .entry(format!("{quest}/{}", o.id))
                            .or_insert(0);
                        *p = (*p).max(o.target);
                    }
                }
                self.unlock_after(content, std::slice::from_ref(quest));
            }
            Effect::VariableSet { variable, value } => {
                self.sheet.vars.insert(variable.clone(), value.clone());
            }
            _ => {}
        }
    }

    /// Every quest not accepted gets the status the shared rule gives it
    /// ([`banter_rules::quest_status`]): available once its prerequisites are completed. The
    /// sheet keeps only statuses that are not `available`.
    fn unlock(&mut self, content: &Content) {
        self.available = Overlay::default();
        for at in 0..content.quests.len() {
            self.settle(content, at);
        }
    }

    /// [`ClientFacts::unlock`] for what `changed` (quests newly held, completed or given up) can
    /// change: those quests and the quests that name them as prerequisites.
    fn unlock_after(&mut self, content: &Content, changed: &[String]) {
        for quest in changed {
            if let Some(at) = content.quest_index(quest) {
                self.settle(content, at);
            }
            for at in content.dependents_of(quest) {
                self.settle(content, at);
            }
        }
    }

    /// The status of the quest at `at` in the content, by the shared rule, into the sheet.
    fn settle(&mut self, content: &Content, at: usize) {
        let Some(def) = content.quests.get(at) else {
            return;
        };
        let status =
            banter_rules::quest_status(content, &def.id, |q| match self.sheet.quests.get(q) {
                Some(QuestStatus::Active) => Some(banter_rules::Accepted::Active),
                Some(QuestStatus::Completed) => Some(banter_rules::Accepted::Completed),
                _ => None,
            });
        match status {
            QuestStatus::Available => {
                self.sheet.quests.remove(&def.id);
                self.unavailable.remove(&def.id);
                self.available.insert(&at);
            }
            QuestStatus::Unavailable => {
                // Into the sheet only where the server named the quest: what the conversation's
                // conditions read is there already.
                if let Some(named) = self.sheet.quests.get_mut(&def.id) {
                    *named = status;
                }
                self.unavailable.insert(&def.id);
                self.available.remove(&at);
            }
            QuestStatus::Active | QuestStatus::Completed => {
                self.unavailable.remove(&def.id);
                self.available.remove(&at);
            }
        }
    }

    /// The comparable part of the facts, every quest's status spelled out as the sheet would
    /// carry it (the derived unavailable ones included).
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot::from(&self.sheet);
        for quest in self.unavailable.iter() {
            snapshot
                .quests
                .entry(quest.clone())
                .or_insert(QuestStatus::Unavailable);
        }
        snapshot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quest(id: &str, prerequisites: &[&str]) -> QuestDef {
        QuestDef::minimal(id, prerequisites)
    }

    #[test]
    fn copies_of_fresh_facts_share_what_was_worked_out_and_change_apart() {
        let content = Content {
            quests: vec![quest("A", &[]), quest("B", &["A"]), quest("C", &["B"])],
            ..Content::default()
        };
        let fresh = ClientFacts::fresh(&content);
        let mut one = fresh.clone();
        let two = fresh.clone();
        assert!(Arc::ptr_eq(&one.unavailable.base, &two.unavailable.base));
        // Nothing derived is in the sheet: it stays the size of what the server sent.
        assert!(fresh.sheet.quests.is_empty());
        let profile = Profile::default();
        for effect in [
            Effect::QuestAccepted {
                quest: "A".into(),
                objectives: vec![],
            },
            Effect::QuestCompleted {
                quest: "A".into(),
                coins: 0,
                experience: 0,
            },
        ] {
            one.apply(&content, &effect, &profile);
        }
        assert_eq!(one.status("B"), QuestStatus::Available);
        assert_eq!(one.status("C"), QuestStatus::Unavailable);
        assert_eq!(two.status("B"), QuestStatus::Unavailable);
        let mut available: Vec<usize> = one.available().collect();
        available.sort_unstable();
        assert_eq!(available, vec![1]);
        // The snapshot spells every status out, as a sheet of the whole world would.
        let snapshot = one.snapshot();
        assert_eq!(snapshot.quests.get("A"), Some(&QuestStatus::Completed));
        assert_eq!(snapshot.quests.get("B"), None);
        assert_eq!(snapshot.quests.get("C"), Some(&QuestStatus::Unavailable));
        assert_eq!(two.snapshot().quests.len(), 2);
        // Equal facts compare equal however their sets are split.
        let mut rebuilt = ClientFacts::default();
        rebuilt.unlock(&content);
        assert_eq!(rebuilt, fresh);
    }

    #[test]
    fn effects_move_a_quest_through_its_life_and_unlock_the_next() {
        let content = Content {
            quests: vec![quest("A", &[]), quest("B", &["A"])],
            ..Content::default()
        };
        let mut facts = ClientFacts::fresh(&content);
        assert_eq!(facts.status("A"), QuestStatus::Available);
        assert_eq!(facts.status("B"), QuestStatus::Unavailable);
        let profile = Profile::default();
        facts.apply(
            &content,
            &Effect::QuestAccepted {
                quest: "A".into(),
                objectives: vec!["O".into()],
            },
            &profile,
        );
        assert_eq!(facts.status("A"), QuestStatus::Active);
        assert_eq!(facts.progress("A", "O"), 0);
        assert!(!facts.objectives_done(&content.quests[0]));
        facts.apply(
            &content,
            &Effect::ObjectiveAdvanced {
                quest: "A".into(),
                objective: "O".into(),
                progress: 3,
                target: 3,
            },
            &profile,
        );
        assert!(facts.objectives_done(&content.quests[0]));
        let paid = Profile {
            coins: 10,
            ..Profile::default()
        };
        facts.apply(
            &content,
            &Effect::QuestCompleted {
                quest: "A".into(),
                coins: 10,
                experience: 0,
            },
            &paid,
        );
        assert_eq!(facts.status("A"), QuestStatus::Completed);
        assert_eq!(facts.status("B"), QuestStatus::Available);
        assert_eq!(facts.sheet.coins, 10);
    }
}
