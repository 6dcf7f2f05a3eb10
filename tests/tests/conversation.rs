//! A full conversation over a real WebSocket: talk, walk with the client rules, actions,
//! effects, close; and the client-side graph built from what the server sent.

use std::time::Duration;

use banter_dialogue::{ClientWalk, Screen};
use banter_e2e::{Backend, TestServer};
use banter_protocol::{Effect, ServerMessage};

const PIM: [f64; 3] = [-640.0, 2.0, 910.0];

async fn a_player_talks_to_pim_hears_the_tale_and_is_paid_once(backend: Backend) {
    let server =
        TestServer::start_on_with(backend, |c| c.world.talk_cooldown = Duration::ZERO).await;
    let mut client = server.player_at("device-pim-0001", PIM).await;
    let (graph, entry, facts) = client.open_conversation("Pim").await;
    assert_eq!(
        entry, "PimsTideTale_Greet",
        "the resolver offers Pim's quest"
    );

    let mut out = Vec::new();
    let first = graph.find(&entry).expect("entry");
    let mut walk = ClientWalk::open(&graph, first, &facts, &mut out).expect("opens");
    let mut effects = client.send_queued(&graph, &mut out).await;

    // Say yes, then advance through the tale until the conversation ends.
    let yes = walk.choices(&graph, &facts).next().expect("a choice");
    walk.choose(&graph, yes, &facts, &mut out).expect("choose");
    effects.extend(client.send_queued(&graph, &mut out).await);
    while walk.screen() != Screen::Ended {
        assert!(walk.can_advance(&graph, &facts), "{:?}", walk.screen());
        walk.advance_current(&graph, &facts, &mut out)
            .expect("advance");
        // The last step the walk queues is its `close`.
        effects.extend(client.send_queued(&graph, &mut out).await);
    }

    let kinds: Vec<&Effect> = effects
        .iter()
        .filter_map(|m| match m {
            ServerMessage::Effect { effect, .. } => Some(effect),
            _ => None,
        })
        .collect();
    assert!(matches!(
        kinds[0],
        Effect::QuestAccepted { quest, objectives }
            if quest == "PimsTideTale" && objectives == &["HearTheTale"]
    ));
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
    let (_, entry, facts) = client.open_conversation("Pim").await;
    assert_eq!(entry, "AllDone");
    assert_eq!(facts.coins, coins);

    // The coins survive a restart: a new server process on the same database remembers them,
    // and the ledger holds exactly one row for the paid quest.
    let server = server.restart().await;
    let mut client = server.player_at("device-pim-0001", PIM).await;
    let (_, entry, facts) = client.open_conversation("Pim").await;
    assert_eq!(entry, "AllDone", "the completed quest is remembered");
    assert_eq!(facts.coins, coins, "the coins survive the restart");
    assert_eq!(
        server
            .database()
            .scalar("SELECT COUNT(*) FROM reward_ledger WHERE quest_id = 'PimsTideTale'")
            .await,
        1
    );
    assert_eq!(
        server
            .database()
            .scalar("SELECT CAST(SUM(coins) AS BIGINT) FROM reward_ledger")
            .await,
        coins
    );
    server.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(a_player_talks_to_pim_hears_the_tale_and_is_paid_once,);
