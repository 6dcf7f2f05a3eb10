//! A full conversation over a real WebSocket: talk, walk with the client rules, actions,
//! effects, close; and the client-side graph built from what the server sent.

use std::time::Duration;

use banter_dialogue::{ClientWalk, DialogueGraph, Outgoing, Screen, build_conversation};
use banter_e2e::{Client, TestServer};
use banter_protocol::{ClientMessage, Effect, ServerMessage};

const PIM: [f64; 3] = [-640.0, 2.0, 910.0];

/// Opens a conversation and builds the graph from the content the server sent.
async fn talk(
    client: &mut Client,
    npc: &str,
) -> (DialogueGraph, String, banter_protocol::FactSheet) {
    let reply = client
        .request(ClientMessage::Talk {
            id: None,
            npc: npc.into(),
            instance: None,
            cached: None,
        })
        .await
        .expect("talk accepted");
    let opened = reply
        .messages
        .into_iter()
        .find_map(|m| match m {
            ServerMessage::Opened {
                conversation,
                entry,
                content,
                facts,
                ..
            } => Some((conversation, entry, content, facts)),
            _ => None,
        })
        .expect("opened");
    let (name, entry, content, facts) = opened;
    let (graph, diagnostics) = build_conversation(&name, &content.expect("content sent"));
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    (graph, entry, facts)
}

/// Sends what the client walk queued, in order, and collects the effects.
async fn flush(
    client: &mut Client,
    graph: &DialogueGraph,
    out: &mut Vec<Outgoing>,
) -> Vec<ServerMessage> {
    let mut seen = Vec::new();
    for message in out.drain(..) {
        let wire = match message {
            Outgoing::Advance(v) => ClientMessage::Advance {
                id: None,
                node: graph.vertex(v).expect("vertex").name.to_string(),
            },
            Outgoing::Choose(v) => ClientMessage::Choose {
                id: None,
                response: graph.vertex(v).expect("vertex").name.to_string(),
            },
            Outgoing::Action(i) => {
                let a = graph.action(i).expect("action");
                ClientMessage::Action {
                    id: None,
                    action: a.action_type,
                    payload: a.payload.to_string(),
                }
            }
        };
        let reply = client.request(wire.clone()).await;
        let reply = reply.unwrap_or_else(|e| panic!("{wire:?} refused: {e:?}"));
        seen.extend(reply.messages);
    }
    seen
}

#[tokio::test]
async fn a_player_talks_to_pim_hears_the_tale_and_is_paid_once() {
    let server = TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await;
    let mut client = server.player_at("device-pim-0001", PIM).await;
    let (graph, entry, facts) = talk(&mut client, "Pim").await;
    assert_eq!(
        entry, "PimsTideTale_Greet",
        "the resolver offers Pim's quest"
    );

    let mut out = Vec::new();
    let first = graph.find(&entry).expect("entry");
    let mut walk = ClientWalk::open(&graph, first, &facts, &mut out).expect("opens");
    let mut effects = flush(&mut client, &graph, &mut out).await;

    // Say yes, then advance through the tale until the conversation ends.
    let yes = walk.choices(&graph).next().expect("a choice");
    walk.choose(&graph, yes, &facts, &mut out).expect("choose");
    effects.extend(flush(&mut client, &graph, &mut out).await);
    while walk.screen() != Screen::Ended {
        assert!(walk.can_advance(&graph), "{:?}", walk.screen());
        walk.advance(&graph, &facts, &mut out).expect("advance");
        effects.extend(flush(&mut client, &graph, &mut out).await);
    }
    client
        .request(ClientMessage::Close { id: None })
        .await
        .expect("closed");

    let kinds: Vec<&Effect> = effects
        .iter()
        .filter_map(|m| match m {
            ServerMessage::Effect { effect, .. } => Some(effect),
            _ => None,
        })
        .collect();
    assert!(matches!(kinds[0], Effect::QuestAccepted { quest } if quest == "PimsTideTale"));
    assert!(matches!(
        kinds[1],
        Effect::ObjectiveAdvanced {
            progress: 1,
            target: 1,
            ..
        }
    ));
    assert!(matches!(kinds[2], Effect::QuestCompleted { .. }));
    let coins = effects
        .iter()
        .rev()
        .find_map(|m| match m {
            ServerMessage::Effect { profile, .. } => Some(profile.coins),
            _ => None,
        })
        .expect("a profile");
    assert!(coins > 0, "the reward was paid");

    // Talking again opens on AllDone: nothing left to offer, nothing paid twice.
    let (_, entry, facts) = talk(&mut client, "Pim").await;
    assert_eq!(entry, "AllDone");
    assert_eq!(facts.coins, coins);
    server.stop().await.expect("clean shutdown");
}
