//! The session's commands, one function each: what `SessionCore::command` dispatches to (the
//! cutscene's are in `cutscene.rs`, `resume` in `parking.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::Walk;
use banter_dialogue::content::NpcDef;
use banter_dialogue::locale::Locale;
use banter_player::{DialogueState, StoryState};
use banter_protocol::{Action, ActionType, CloseReason, Position, ServerMessage};

use super::core::{Audited, OpenConversation, SessionCore, open_mut};
use super::refusal::{Refusal, SessionError};
use super::store::SessionStore;
use crate::analytics::ConversationTally;
use crate::quests::{self, ServerFacts};
use crate::served::ContentVersion;
use crate::world::{self, WorldError};

impl SessionCore {
    pub(super) fn on_move(
        &mut self,
        position: Position,
        now: Duration,
    ) -> Result<Audited, Refusal> {
        if self.engine_placed {
            return Err(SessionError::PositionOwned.into());
        }
        self.body
            .move_to(&self.app.config.world, position, now)
            .map_err(WorldError::from)?;
        self.remember();
        // Walking out of the NPC's reach ends the conversation.
        self.close_if_out_of_reach(now);
        Ok(Audited::Trail)
    }

    pub(super) fn on_advance(&mut self, node: &str, now: Duration) -> Result<Audited, Refusal> {
        let open = open_mut(&mut self.conversation)?;
        // A shared conversation's walk is the leader's to move (PROTOCOL.md section 17.2).
        let party = open.shared.clone();
        if let Some(party) = &party
            && !self.app.rooms.leads(party, &self.player)
        {
            return Err(crate::rooms::RoomError::NotLeader.into());
        }
        let vertex = open
            .graph
            .find(node)
            .ok_or_else(|| SessionError::UnknownVertex(node.to_owned()))?;
        let facts = ServerFacts {
            record: &self.record,
            machine: &self.machine,
            content: &open.library.content,
            conversation: &open.name,
        };
        let shown = open.walk.advance(&open.graph, vertex, &facts)?;
        open.tally.stepped(&open.graph, &open.walk, shown, now);
        if let Some(party) = party {
            self.advanced_shared(&party, vertex, shown, now)?;
        }
        Ok(Audited::Trail)
    }

    pub(super) fn on_choose(&mut self, response: &str, now: Duration) -> Result<Audited, Refusal> {
        let open = open_mut(&mut self.conversation)?;
        if open.shared.is_some() {
            return self.vote(response);
        }
        let vertex = open
            .graph
            .find(response)
            .ok_or_else(|| SessionError::UnknownVertex(response.to_owned()))?;
        let facts = ServerFacts {
            record: &self.record,
            machine: &self.machine,
            content: &open.library.content,
            conversation: &open.name,
        };
        let shown = open.walk.choose(&open.graph, vertex, &facts)?;
        open.tally.chose(vertex);
        open.tally.stepped(&open.graph, &open.walk, shown, now);
        Ok(Audited::Trail)
    }

    pub(super) fn on_close(&mut self, now: Duration) -> Result<Audited, Refusal> {
        if self.conversation.is_none() {
            return Err(SessionError::NoConversation.into());
        }
        self.close_conversation(CloseReason::Client, now);
        Ok(Audited::Trail)
    }

    pub(super) fn on_set_afk(&mut self, afk: bool) -> Result<Audited, Refusal> {
        self.afk.set(&mut self.machine, afk);
        Ok(Audited::Trail)
    }

    pub(super) fn on_set_locale(&mut self, locale: &str) -> Result<Audited, Refusal> {
        let locale = Locale::parse(locale).map_err(SessionError::BadLocale)?;
        self.locale = Some(locale);
        let locale = self.served_locale();
        self.out.push(ServerMessage::LocaleSet { locale });
        Ok(Audited::Trail)
    }

    /// The open conversation's own version (the one its `opened` or `resumed` hash names), else
    /// the version served now.
    pub(super) fn on_fetch_conversation(&mut self, conversation: &str) -> Result<Audited, Refusal> {
        let library = match &self.conversation {
            Some(open) if open.name == conversation => open.library.clone(),
            _ => self.app.content.current(),
        };
        let published = library
            .conversations
            .get(conversation)
            .ok_or_else(|| SessionError::UnknownConversation(conversation.to_owned()))?;
        let (json, hash) = published.for_locale(self.locale.as_ref());
        self.out.push(ServerMessage::Conversation {
            conversation: conversation.to_owned(),
            hash: hash.to_owned(),
            content: json.to_string(),
        });
        Ok(Audited::Trail)
    }

    pub(super) async fn on_talk(
        &mut self,
        name: &str,
        hint: Option<&str>,
        cached: Option<&str>,
        at: super::core::Now,
    ) -> Result<Audited, Refusal> {
        let now = at.mono;
        if self.conversation.is_some() {
            return Err(SessionError::ConversationOpen.into());
        }
        let position = self.check_free()?;
        let rules = &self.app.config.world;
        if banter_rules::talk_cooldown_left(rules, self.last_talk, now).is_some() {
            return Err(WorldError::TalkCooldown(rules.talk_cooldown).into());
        }
        let library = self.app.content.current();
        let npc = library
            .npcs
            .resolve(name, hint, position)
            .ok_or_else(|| WorldError::UnknownNpc(name.to_owned()))?
            .clone();
        world::check_reach(&self.app.config.world, &npc, &self.body)?;
        if let Some(audited) = self.talk_shared(&library, &npc, cached, at).await? {
            return Ok(audited);
        }
        self.open_conversation(library, npc, cached, now, None)
            .await
    }

    pub(super) async fn open_conversation(
        &mut self,
        library: Arc<ContentVersion>,
        npc: NpcDef,
        cached: Option<&str>,
        now: Duration,
        shared: Option<banter_protocol::SharedView>,
    ) -> Result<Audited, Refusal> {
        let published = library
            .conversations
            .get(&npc.conversation)
            .ok_or_else(|| SessionError::UnknownConversation(npc.conversation.clone()))?;
        let graph = published.graph.clone();
        let first = graph
            .first_node()
            .and_then(|v| graph.vertex(v))
            .map(|v| &*v.name);
        // During the tutorial every NPC but the one it points at opens on the stage's lockout
        // line; the pointed NPC comes from the function clients use too.
        let lockout = banter_dialogue::tutorial::lockout_entry(
            &library.content,
            self.record.profile.tutorial_stage,
            &npc.id,
        );
        let resolved = match lockout {
            Some(node) => Some(node),
            None => quests::resolve_entry(&library.content, &npc.id, first, &self.record),
        };
        let entry_name = resolved.ok_or_else(|| {
            SessionError::Content(format!("`{}` has no entry for this player", npc.id))
        })?;
        if lockout.is_none()
            && let Some(quest) = banter_dialogue::resolver::cutscene_offer(
                &library.content,
                &npc.id,
                entry_name,
                |q| quests::quest_status(&self.record, &library.content, &q.id),
            )
        {
            // A cutscene quest opens no conversation: accept, play, pay when it ends.
            let quest = quest.clone();
            return self.start_cutscene_quest(&library, &quest, now).await;
        }
        let entry = graph.find(entry_name).ok_or_else(|| {
            SessionError::Content(format!(
                "the entry node `{entry_name}` is not in `{}`",
                npc.conversation
            ))
        })?;
        self.start_walk(library, npc, entry, cached, now, shared)?;
        // A new conversation supersedes one a dropped connection left for a resume, here or on
        // another instance (asked of the store once a session: only a session's first
        // conversation can find one there).
        self.app.parked.discard(&self.player);
        if std::mem::take(&mut self.may_have_parked)
            && let Err(e) = self.store().discard_parked(&self.player).await
        {
            tracing::warn!(player = %self.player, error = %e, "cannot discard a parked conversation");
        }
        Ok(Audited::Trail)
    }

    /// Opens the walk on `entry` and tells the client (`opened`, with `shared` for a shared
    /// conversation's participant): the one way a conversation opens, from a `talk`, a
    /// participant joining a shared conversation, or a cutscene's end.
    pub(super) fn start_walk(
        &mut self,
        library: Arc<ContentVersion>,
        npc: NpcDef,
        entry: banter_dialogue::VertexId,
        cached: Option<&str>,
        now: Duration,
        shared: Option<banter_protocol::SharedView>,
    ) -> Result<(), Refusal> {
        let published = library
            .conversations
            .get(&npc.conversation)
            .ok_or_else(|| SessionError::UnknownConversation(npc.conversation.clone()))?;
        let graph = published.graph.clone();
        // The player is talking from here on: the facts the client gets say so, as do the ones
        // the server checks later conditions against. Undone if the walk cannot open.
        let was = self.machine;
        self.dialogue
            .enter(&mut self.machine, DialogueState::Talking);
        let facts = ServerFacts {
            record: &self.record,
            machine: &self.machine,
            content: &library.content,
            conversation: &npc.conversation,
        };
        // A conversation with a `Weighted` group draws from a seed of its own (PROTOCOL.md 10.1).
        let seed = if graph.has_weighted() {
            self.app.rooms.seed(super::shared::new_seed())
        } else {
            0
        };
        let walk = match Walk::open_seeded(&graph, entry, &facts, seed) {
            Ok((walk, _)) => walk,
            Err(e) => {
                self.machine = was;
                return Err(e.into());
            }
        };
        let mut sheet = facts.sheet(&graph);
        sheet.seed = graph.has_weighted().then_some(seed);
        let entry_name = graph
            .vertex(entry)
            .map(|v| v.name.to_string())
            .unwrap_or_default();
        self.last_talk = Some(now);
        self.remember();
        self.app.metrics.conversation_opened();
        // The text in the player's locale: its own hash, the same structure.
        let (json, hash) = published.for_locale(self.locale.as_ref());
        let party = shared.as_ref().map(|s| s.party.clone());
        self.out.push(ServerMessage::Opened {
            conversation: npc.conversation.clone(),
            npc: world::npc_ref(&npc),
            speaker: graph.speaker().map(str::to_owned),
            entry: entry_name,
            hash: hash.to_owned(),
            content: (cached != Some(hash)).then(|| json.to_string()),
            facts: sheet,
            shared,
        });
        let uid = self.next_uid();
        let tally = ConversationTally::opened(&graph, &walk, entry, now);
        let locale = self.served_locale();
        self.conversation = Some(OpenConversation {
            name: npc.conversation.clone(),
            npc,
            library,
            graph,
            walk,
            uid,
            spent: HashMap::new(),
            tally,
            locale,
            shared: party,
        });
        Ok(())
    }

    /// An `action` whose armed action needs no store (a shop, the sell menu, a cutscene, the
    /// boat), run at once; `None` when it needs the store ([`SessionCore::on_action`], which
    /// the dispatch calls only then). A refusal is final either way.
    pub(super) fn on_action_now(
        &mut self,
        action_type: ActionType,
        payload: &str,
        now: Duration,
    ) -> Option<Result<Audited, Refusal>> {
        let armed = match self.arm(action_type, payload, now) {
            Ok(armed) => armed,
            Err(refusal) => return Some(Err(refusal)),
        };
        let outcome = match armed.authored() {
            Ok(authored) => quests::execute_local(authored)?,
            Err(e) => return Some(Err(e.into())),
        };
        Some(self.spend(&armed, action_type, outcome, Audited::Trail, now))
    }

    pub(super) async fn on_action(
        &mut self,
        action_type: ActionType,
        payload: &str,
        now: Duration,
    ) -> Result<Audited, Refusal> {
        let armed = self.arm(action_type, payload, now)?;
        let authored = armed.authored()?;
        let open = open_mut(&mut self.conversation)?;
        // The arming's step: the same arming sent again (after `outcome_unknown`, say) has the
        // same key, so the store applies it at most once and the answer says what it did. Only
        // a step that writes has an audit row of its own (the others go to the trail).
        let key = format!(
            "{}/{}/{}",
            open.uid,
            armed.index.0,
            open.spent.get(&armed.index).copied().unwrap_or(0)
        );
        let detail = format!("{} {payload}", action_type.name());
        let context = quests::StepContext {
            key: &key,
            conversation: Some(&open.name),
            message: "action",
            detail: Some(crate::audit::truncate(
                &detail,
                crate::audit::MAX_DETAIL_BYTES,
            )),
        };
        let outcome = quests::execute(
            self.app.store.as_ref(),
            &armed.library.content,
            &self.player,
            &mut self.record,
            authored,
            &context,
        )
        .await?;
        let audited = if quests::mutates_store(authored) {
            Audited::InStep
        } else {
            Audited::Trail
        };
        self.spend(&armed, action_type, outcome, audited, now)
    }

    /// Checks an `action` against the world and the walk at `now`: the NPC in reach (out of
    /// reach, the conversation ends and nothing runs), the player free, the action armed with
    /// this payload, and a server-decided jump landing on a line of this graph.
    fn arm(
        &mut self,
        action_type: ActionType,
        payload: &str,
        now: Duration,
    ) -> Result<Armed, Refusal> {
        // No conversation is the first refusal, before the world's.
        open_mut(&mut self.conversation)?;
        if let Some(far) = self.close_if_out_of_reach(now) {
            return Err(far.into());
        }
        self.check_free()?;
        let open = open_mut(&mut self.conversation)?;
        let index = open.walk.check_action(&open.graph, action_type, payload)?;
        let armed = Armed {
            graph: open.graph.clone(),
            library: open.library.clone(),
            index,
        };
        if let Action::CheckQuest {
            success_node,
            failure_node,
            ..
        } = armed.authored()?
        {
            for node in [success_node, failure_node] {
                armed
                    .graph
                    .find(node)
                    .ok_or_else(|| SessionError::UnknownVertex(node.clone()))?;
            }
        }
        Ok(armed)
    }

    /// An armed action that ran (committed, if it writes): only now is the arming spent, and
    /// the client told what it did.
    fn spend(
        &mut self,
        armed: &Armed,
        action_type: ActionType,
        outcome: quests::Outcome,
        audited: Audited,
        now: Duration,
    ) -> Result<Audited, Refusal> {
        let (graph, library, index) = (&armed.graph, &armed.library, armed.index);
        self.app.metrics.action_run(action_type);
        let open = open_mut(&mut self.conversation)?;
        open.walk.spend(index);
        *open.spent.entry(index).or_insert(0) += 1;
        open.tally.ran(graph, index);
        self.app
            .analytics
            .effect(library, &open.locale, &outcome.effect);
        // In a shared conversation only the leader's check moves the walk (PROTOCOL.md 17.2).
        let jump = outcome.jump.clone().filter(|_| self.takes_own_jumps());
        let open = open_mut(&mut self.conversation)?;
        if let Some(node) = &jump {
            let target = graph
                .find(node)
                .ok_or_else(|| SessionError::UnknownVertex(node.clone()))?;
            let facts = ServerFacts {
                record: &self.record,
                machine: &self.machine,
                content: &library.content,
                conversation: &open.name,
            };
            open.walk.jump_to(graph, target, &facts)?;
            open.tally.jumped(graph, &open.walk, target, now);
            self.jumped_shared(target, now);
        }
        if let Some(scene) = &outcome.cutscene {
            self.scene_quest = match armed.authored() {
                Ok(Action::PlayCutscene {
                    quest_id: Some(quest),
                    ..
                }) => Some(quest.clone()),
                _ => quests::active_quests(&self.record, &library.content)
                    .into_iter()
                    .find(|q| q.cutscene.as_deref() == Some(scene.as_str()))
                    .map(|q| q.id.clone()),
            };
            self.cutscene = Some(scene.clone());
            self.cutscene_quest = None;
            self.story.enter(&mut self.machine, StoryState::Cutscene);
        }
        self.out.push(ServerMessage::Effect {
            action: action_type,
            effect: outcome.effect,
            profile: quests::profile(&self.record),
        });
        if let Some(node) = jump {
            self.out.push(ServerMessage::Jump { node });
        }
        Ok(audited)
    }

    /// Gives up an active quest (the quest log's abandon; no conversation arms it, and one may
    /// be open). One audited store step, keyed by this session, the quest and how often this
    /// session abandoned it before: the same request sent again after `outcome_unknown` is
    /// applied at most once and answered with what it did.
    pub(super) async fn on_abandon_quest(&mut self, quest: &str) -> Result<Audited, Refusal> {
        if self.scene_quest.as_deref() == Some(quest) {
            return Err(quests::EngineError::QuestState(format!(
                "quest `{quest}` is in its cutscene: send `cutscene_done` first"
            ))
            .into());
        }
        let library = self.app.content.current();
        let before = self.abandoned.get(quest).copied().unwrap_or(0);
        let key = format!("{}/abandon/{quest}/{before}", self.app.session_key(self.id));
        let conversation = self.conversation().map(str::to_owned);
        let context = quests::StepContext {
            key: &key,
            conversation: conversation.as_deref(),
            message: "abandon_quest",
            detail: Some(quest),
        };
        quests::abandon_quest(
            self.app.store.as_ref(),
            &library.content,
            &self.player,
            &mut self.record,
            quest,
            &context,
        )
        .await?;
        self.abandoned.insert(quest.to_owned(), before + 1);
        self.app
            .analytics
            .abandoned(&library, quest, &self.served_locale());
        self.out.push(ServerMessage::QuestAbandoned {
            quest: quest.to_owned(),
            profile: quests::profile(&self.record),
        });
        Ok(Audited::InStep)
    }
}

/// An action the open conversation armed, checked ([`SessionCore::arm`]): the content it was
/// armed in, and where.
struct Armed {
    graph: Arc<banter_dialogue::DialogueGraph>,
    library: Arc<ContentVersion>,
    index: banter_dialogue::ActionIndex,
}

impl Armed {
    /// The action as authored.
    fn authored(&self) -> Result<&Action, SessionError> {
        self.graph
            .action(self.index)
            .map(|armed| &armed.action)
            .ok_or_else(|| SessionError::Content("armed action missing from its graph".into()))
    }
}
