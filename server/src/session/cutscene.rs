//! Cutscenes: the scene a cutscene quest plays (started by `talk`, picked up by the next
//! session) and `cutscene_done`, which pays it.

use std::time::Duration;

use banter_dialogue::content::QuestDef;
use banter_player::StoryState;
use banter_protocol::{Action, ActionType, Effect, ServerMessage};

use super::core::{Audited, SessionCore};
use super::refusal::{Refusal, SessionError};
use crate::quests;
use crate::served::ContentVersion;

impl SessionCore {
    /// A cutscene quest is accepted when its scene starts and completed when the scene is
    /// reported done, so an active one means its scene was playing when the player's last
    /// session ended (a dropped connection, a crash, a restart, another instance): the new
    /// session picks the scene up, `welcome` says so, and `cutscene_done` pays the quest once
    /// (its step key is the quest's, whichever session reports it). The player is not held
    /// busy by it: a client that does not know the field can still talk to the giver, whose
    /// check line plays the scene again in a conversation that pays with its own actions.
    pub(super) fn restore_cutscene(&mut self) {
        let library = self.app.content.current();
        // The first active quest (in content order) that has a scene.
        let playing = quests::active_quests(&self.record, &library.content)
            .into_iter()
            .find_map(|quest| Some((quest.cutscene.clone()?, quest.id.clone())));
        if let Some((scene, quest)) = playing {
            self.cutscene = Some(scene);
            self.scene_quest = Some(quest.clone());
            self.cutscene_quest = Some(quest);
        }
    }

    /// Talking to the giver of an available cutscene quest: the quest is accepted, the client is
    /// told to play the scene, and the session enters `Story.Cutscene` until `cutscene_done`.
    /// Answered before (instead of) any `opened`.
    pub(super) async fn start_cutscene_quest(
        &mut self,
        library: &ContentVersion,
        quest: &QuestDef,
        now: Duration,
    ) -> Result<Audited, Refusal> {
        let scene = quest.cutscene.clone().ok_or_else(|| {
            SessionError::Content(format!("quest `{}` has no cutscene", quest.id))
        })?;
        let accept = Action::AcceptQuest {
            quest_id: quest.id.clone(),
        };
        let key = format!("{}/accept", self.next_uid());
        let detail = format!("AcceptQuest {} (cutscene {scene})", quest.id);
        let context = quests::StepContext {
            key: &key,
            conversation: None,
            message: "talk",
            detail: Some(&detail),
        };
        let outcome = quests::execute(
            self.app.store.as_ref(),
            &library.content,
            &self.player,
            &mut self.record,
            &accept,
            &context,
        )
        .await?;
        self.app.metrics.action_run(ActionType::AcceptQuest);
        self.app.metrics.action_run(ActionType::PlayCutscene);
        self.last_talk = Some(now);
        self.remember();
        self.cutscene = Some(scene.clone());
        self.cutscene_quest = Some(quest.id.clone());
        self.scene_quest = Some(quest.id.clone());
        self.story.enter(&mut self.machine, StoryState::Cutscene);
        let profile = quests::profile(&self.record);
        let locale = self.served_locale();
        self.app
            .analytics
            .cutscene_offered(library, &quest.id, &locale);
        self.app.analytics.effect(library, &locale, &outcome.effect);
        self.out.push(ServerMessage::Effect {
            action: ActionType::AcceptQuest,
            effect: outcome.effect,
            profile: profile.clone(),
        });
        self.out.push(ServerMessage::Effect {
            action: ActionType::PlayCutscene,
            effect: Effect::PlayCutscene { scene },
            profile,
        });
        Ok(Audited::InStep)
    }

    /// The client finished playing the scene the server started. A cutscene quest's objectives
    /// complete and its reward is paid (exactly once, by the store); then the cutscene ends. A
    /// retryable store failure keeps the cutscene, so the client can report it again. A
    /// conversation the cutscene played in continues only if its NPC is still within reach.
    pub(super) async fn on_cutscene_done(
        &mut self,
        scene: &str,
        now: Duration,
    ) -> Result<Audited, Refusal> {
        if self.cutscene.as_deref() != Some(scene) {
            return Err(SessionError::NoCutscene(scene.to_owned()).into());
        }
        let mut audited = Audited::Trail;
        if let Some(quest) = self.cutscene_quest.clone() {
            let library = self.app.content.current();
            let key = quests::cutscene_step_key(&quest);
            let detail = format!("{scene} (CompleteQuest {quest})");
            let conversation = self.conversation().map(str::to_owned);
            let context = quests::StepContext {
                key: &key,
                conversation: conversation.as_deref(),
                message: "cutscene_done",
                detail: Some(&detail),
            };
            let finished = quests::finish_cutscene_quest(
                self.app.store.as_ref(),
                &library.content,
                &self.player,
                &mut self.record,
                &quest,
                &context,
            )
            .await;
            match finished {
                Ok(effect) => {
                    audited = Audited::InStep;
                    self.app.metrics.action_run(ActionType::CompleteQuest);
                    self.app
                        .analytics
                        .effect(&library, &self.served_locale(), &effect);
                    self.out.push(ServerMessage::Effect {
                        action: ActionType::CompleteQuest,
                        effect,
                        profile: quests::profile(&self.record),
                    });
                }
                Err(e) => {
                    let refusal = Refusal::from(e);
                    if !refusal.code.retryable() {
                        self.end_cutscene();
                    }
                    return Err(refusal);
                }
            }
        }
        self.end_cutscene();
        // The cutscene ends back in the conversation it played in: the world is checked again.
        self.close_if_out_of_reach(now);
        Ok(audited)
    }

    fn end_cutscene(&mut self) {
        self.cutscene = None;
        self.cutscene_quest = None;
        self.scene_quest = None;
        self.story.clear(&mut self.machine);
    }
}
