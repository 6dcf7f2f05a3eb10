//! What the client believes about its player: the [`FactSheet`] from the last `opened`, kept
//! current from every `effect` (docs/PROTOCOL.md section 10), and the profile.
//!
//! The one fact the sheet cannot carry, which quests become available when a prerequisite is
//! completed, comes from the quest definitions in the content folder the client loaded.

use banter_dialogue::content::{Content, QuestDef};
use banter_protocol::{Effect, FactSheet, Profile, QuestStatus};

/// The client's copy of the player's facts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientFacts {
    pub sheet: FactSheet,
    pub profile: Profile,
    /// Where the quests available at the last unlock sit in the content's quest list: a bot
    /// looks for its next quest among these and its active ones, not among the world's.
    pub available: std::collections::BTreeSet<usize>,
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
    pub fn fresh(content: &Content) -> ClientFacts {
        let mut facts = ClientFacts::default();
        facts.unlock(content);
        facts
    }

    /// A quest's status (absent from the sheet means available).
    pub fn status(&self, quest: &str) -> QuestStatus {
        self.sheet
            .quests
            .get(quest)
            .copied()
            .unwrap_or(QuestStatus::Available)
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
        for (quest, status) in before.quests {
            if status == QuestStatus::Unavailable {
                self.sheet.quests.entry(quest).or_insert(status);
            }
        }
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
            _ => {}
        }
    }

    /// Every quest not accepted gets the status the shared rule gives it
    /// ([`banter_rules::quest_status`]): available once its prerequisites are completed. The
    /// sheet keeps only statuses that are not `available`.
    fn unlock(&mut self, content: &Content) {
        self.available.clear();
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
                self.available.insert(at);
            }
            QuestStatus::Unavailable => {
                self.sheet.quests.insert(def.id.clone(), status);
                self.available.remove(&at);
            }
            QuestStatus::Active | QuestStatus::Completed => {
                self.available.remove(&at);
            }
        }
    }

    /// The comparable part of the facts.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::from(&self.sheet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quest(id: &str, prerequisites: &[&str]) -> QuestDef {
        QuestDef::minimal(id, prerequisites)
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
