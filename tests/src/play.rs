//! Whole conversations with the client rules, racing sessions and dropped connections.

use std::net::SocketAddr;
use std::time::Duration;

use banter_dialogue::{ClientWalk, DialogueGraph, Outgoing, Screen, build_conversation};
use banter_protocol::{ActionType, Effect, Position, QuestStatus, ServerMessage};
use futures_util::StreamExt;
use tokio_tungstenite::MaybeTlsStream;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::*;

// ---------------------------------------------------------------------------------------------
// Playing whole conversations with the client rules (banter-dialogue's ClientWalk).
// ---------------------------------------------------------------------------------------------

/// Five studs from Pim, who stands at (-640, 2, 915): within his reach.
pub const NEAR_PIM: Position = [-640.0, 2.0, 910.0];
/// Pim's quest in the sample content: a talk quest, whose objective is hearing the tale.
pub const PIMS_QUEST: &str = "PimsTideTale";
/// The payload of the tale's `AdvanceObjective`.
pub const PIMS_OBJECTIVE: &str = "PimsTideTale|HearTheTale|1|mistral_cay";
/// The payload of Grandpa Fennick's `CheckQuest` for Copper Snappers.
pub const SNAPPER_CHECK: &str = "CopperSnappers|CopperSnappers_Complete|CopperSnappers_NotYet";
/// Keeper Ines's cutscene quest.
pub const LANTERNS_QUEST: &str = "LanternsOfGullRock";
/// The scene of Keeper Ines's cutscene quest.
pub const LANTERN_SCENE: &str = "LanternLighting";

impl Client {
    /// From Pim's greeting on screen, to the line that pays: says yes, accepts the quest, hears
    /// the tale (its objective) and advances to the ending. Every step must be accepted.
    pub async fn hear_pims_tale(&mut self) {
        self.accept_pims_quest().await;
        self.from_the_tale_to_the_ending().await;
    }

    /// From Pim's greeting on screen: says yes and accepts the quest; the accepting reply. Both
    /// steps must be accepted.
    pub async fn accept_pims_quest(&mut self) -> Reply {
        self.choose("PimsTideTale_Greet_r1").await.expect("yes");
        self.action(ActionType::AcceptQuest, PIMS_QUEST)
            .await
            .expect("accepted")
    }

    /// With Pim's quest accepted: the tale, its objective, the ending. Every step accepted.
    pub async fn from_the_tale_to_the_ending(&mut self) {
        self.advance("PimsTideTale_Tale").await.expect("the tale");
        self.action(ActionType::AdvanceObjective, PIMS_OBJECTIVE)
            .await
            .expect("heard it");
        self.advance("PimsTideTale_Ending")
            .await
            .expect("the ending");
    }

    /// With Pim's quest accepted: the tale to the ending, then the completion; its reply.
    pub async fn finish_pims_tale(&mut self) -> Reply {
        self.from_the_tale_to_the_ending().await;
        self.action(ActionType::CompleteQuest, PIMS_QUEST)
            .await
            .expect("paid")
    }

    /// Within Grandpa Fennick's reach: talks to him, takes on Copper Snappers (the greeting's
    /// first response, then its `AcceptQuest`) and returns the accepting reply; the conversation
    /// stays open.
    pub async fn accept_copper_snappers(&mut self) -> Reply {
        let opened = self.talk("Grandpa Fennick").await.expect("talk");
        assert_eq!(opened.entry, "CopperSnappers_Greet");
        self.choose("CopperSnappers_Greet_r1")
            .await
            .expect("three snappers");
        self.action(ActionType::AcceptQuest, "CopperSnappers")
            .await
            .expect("accepted")
    }

    /// With Fennick's `CopperSnappers_Check` on screen: has a look, then runs the armed quest
    /// check, which must report `done`; its reply.
    pub async fn check_copper_snappers(&mut self, done: bool) -> Reply {
        self.choose("CopperSnappers_Check_r1")
            .await
            .expect("have a look");
        self.run_the_snapper_check(done).await
    }

    /// On the check's failure line: counts again, back to the check, and has another look; the
    /// quest check is armed again.
    pub async fn look_at_the_snappers_again(&mut self) {
        self.choose("CopperSnappers_NotYet_r2")
            .await
            .expect("count again");
        self.choose("CopperSnappers_Check_r1")
            .await
            .expect("have a look, again");
    }

    /// With the look at the snappers picked: runs the armed quest check, which must report
    /// `done`; its reply.
    pub async fn run_the_snapper_check(&mut self, done: bool) -> Reply {
        let checked = self
            .action(ActionType::CheckQuest, SNAPPER_CHECK)
            .await
            .expect("checked");
        let reported = Effect::QuestChecked {
            quest: "CopperSnappers".into(),
            done,
        };
        assert_eq!(checked.effects(), [reported]);
        checked
    }

    /// Within Keeper Ines's reach, while `LanternsOfGullRock` is her offer: talks to her, which
    /// opens no conversation but accepts the quest and starts its cutscene (both asserted); the
    /// reply.
    pub async fn start_the_lantern_cutscene(&mut self) -> Reply {
        let reply = self.talk_reply("Keeper Ines").await.expect("talk to Ines");
        assert!(reply.opened().is_none(), "{:?}", reply.messages);
        assert_eq!(
            reply.effects(),
            vec![
                Effect::QuestAccepted {
                    quest: LANTERNS_QUEST.into(),
                    objectives: vec!["WatchTheLighting".into()]
                },
                Effect::PlayCutscene {
                    scene: LANTERN_SCENE.into()
                }
            ]
        );
        reply
    }
}

impl TestServer {
    /// A new player spawned next to Pim ([`NEAR_PIM`]) who talked to him: the client, with his
    /// conversation open, and its `opened` message.
    pub async fn player_talking_to_pim(&self, device: &str) -> (Client, Opened) {
        let mut client = self.player_at(device, NEAR_PIM).await;
        let opened = client.talk("Pim").await.expect("talk to Pim");
        (client, opened)
    }
}

impl Opened {
    /// Asserts Pim's conversation opened on `entry`, with his quest `status` and the player's
    /// coins and experience as `reward_so_far`.
    #[track_caller]
    pub fn assert_pims_quest_state(
        &self,
        entry: &str,
        status: QuestStatus,
        reward_so_far: (i64, i64),
    ) {
        assert_eq!(self.entry, entry);
        assert_eq!(self.facts.quests.get(PIMS_QUEST), Some(&status));
        assert_eq!((self.facts.coins, self.facts.experience), reward_so_far);
    }
}

impl Reply {
    /// Asserts this is the payment of Copper Snappers to a player who had no coins before: its
    /// reward, and the profile after it.
    #[track_caller]
    pub fn assert_copper_snappers_paid(&self) {
        assert_eq!(
            self.effects(),
            vec![Effect::QuestCompleted {
                quest: "CopperSnappers".into(),
                coins: 120,
                experience: 40
            }]
        );
        assert_eq!(self.profile().expect("a profile").coins, 120);
    }
}

impl Client {
    /// Opens a conversation and builds the graph from the content the server sent.
    pub async fn open_conversation(
        &mut self,
        npc: &str,
    ) -> (DialogueGraph, String, banter_protocol::FactSheet) {
        let reply = self.talk_reply(npc).await.expect("talk accepted");
        let opened = reply.opened().expect("opened");
        let content = opened.content.expect("content sent");
        let (graph, diagnostics) = build_conversation(&opened.conversation, &content);
        assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
        (graph, opened.entry, opened.facts)
    }

    /// Sends what the client walk queued, in order, and collects the effects.
    pub async fn send_queued(
        &mut self,
        graph: &DialogueGraph,
        out: &mut Vec<Outgoing>,
    ) -> Vec<ServerMessage> {
        let mut seen = Vec::new();
        for message in out.drain(..) {
            let wire = message.message(graph).expect("a step of this graph");
            let reply = self.request(wire.clone()).await;
            let reply = reply.unwrap_or_else(|e| panic!("{wire:?} refused: {e:?}"));
            seen.extend(reply.messages);
        }
        seen
    }

    /// Talks to `npc` and plays the conversation to its end with the client rules (which close
    /// it there), always taking the first response offered and following the server's jumps. The entry node and
    /// every message the server sent on the way.
    pub async fn play_through(&mut self, npc: &str) -> (String, Vec<ServerMessage>) {
        let (graph, entry, facts) = self.open_conversation(npc).await;
        let mut out = Vec::new();
        let first = graph.find(&entry).expect("the entry is in the graph");
        let mut walk = ClientWalk::open(&graph, first, &facts, &mut out).expect("opens");
        let mut seen = Vec::new();
        loop {
            let replies = self.send_queued(&graph, &mut out).await;
            for message in &replies {
                if let ServerMessage::Jump { node, .. } = message {
                    let to = graph.find(node).expect("the jump target is in the graph");
                    walk.jump(&graph, to, &facts, &mut out).expect("jump");
                }
            }
            seen.extend(replies);
            if !out.is_empty() {
                continue;
            }
            match walk.screen() {
                Screen::Ended => break,
                _ if walk.can_advance(&graph, &facts) => {
                    walk.advance_current(&graph, &facts, &mut out)
                        .expect("advance");
                }
                _ => {
                    let choice = walk.choices(&graph, &facts).next().expect("a choice");
                    walk.choose(&graph, choice, &facts, &mut out)
                        .expect("choose");
                }
            }
        }
        // The walk's last step was its `close`.
        (entry, seen)
    }
}

// ---------------------------------------------------------------------------------------------
// Racing sessions and dropped connections: connecting from a task, bounded waits that report
// instead of panicking, and a connection that drops without a goodbye.
// ---------------------------------------------------------------------------------------------

/// Opens a WebSocket to the server at `addr` with a token, reading nothing: what
/// [`TestServer::connect_raw`] does, for a spawned task that holds no reference to the server.
pub async fn connect_raw_at(addr: SocketAddr, token: &str) -> Result<Client, tungstenite::Error> {
    let url = format!("ws://{addr}/v1/ws?token={token}");
    let (ws, _) = tokio_tungstenite::connect_async(url).await?;
    Ok(Client { ws, next_id: 0 })
}

impl Client {
    /// The next protocol message if one arrives within `wait` (pings and pongs skipped):
    /// `Ok(Some(message))`, `Ok(None)` once the server closed the connection, `Err` if nothing
    /// came in time. Unlike [`Client::try_recv`] a quiet connection is an answer, not a panic,
    /// so a test can wait on many connections and tell which stayed silent.
    pub async fn recv_within(
        &mut self,
        wait: Duration,
    ) -> Result<Option<ServerMessage>, tokio::time::error::Elapsed> {
        tokio::time::timeout(wait, async {
            loop {
                match self.ws.next().await {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return None,
                    Some(Ok(Message::Text(text))) => {
                        return Some(
                            serde_json::from_str(text.as_str()).expect("a protocol message"),
                        );
                    }
                    Some(Ok(_)) => continue,
                }
            }
        })
        .await
    }

    /// Drops the connection the way a lost network or a killed client does: no WebSocket Close
    /// frame, and the TCP connection reset (`SO_LINGER` 0) instead of shut down. The server sees
    /// the stream fail, never a clean close, so it treats the session as dropped (and parks an
    /// open conversation for a `resume`).
    pub fn abort(self) {
        if let MaybeTlsStream::Plain(stream) = self.ws.get_ref() {
            // If the option cannot be set the socket still closes without a Close frame.
            let _ = stream.set_zero_linger();
        }
        drop(self);
    }
}
