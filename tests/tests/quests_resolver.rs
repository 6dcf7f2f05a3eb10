//! The QuestlineResolver end to end, on both backends (article section 5): which node a
//! conversation opens on, in the article's order.
//!
//! 1. an active quest from this NPC opens on its check node, story quests before the rest;
//! 2. else a tracked quest this NPC offers and the player can take opens on its greeting;
//! 3. else the first available quest's greeting;
//! 4. else `AllDone`;
//! 5. an NPC with no quests opens on its `FirstNode`.
//!
//! Quest states are set up through the store (the engine's own paths are covered by the journey
//! tests); what is under test is the entry the server picks from them.

use std::time::Duration;

use banter_e2e::{Backend, TestServer};
use banter_server::store::{self, Change, ConnectOptions, Step, Store};

/// Hattie Brackwater stands at (60, 3, -10); Marisol at (-6, 3, -18); Old Bram at (1500, 2, -900).
const NEAR_HATTIE: [f64; 3] = [60.0, 3.0, -6.0];
const NEAR_MARISOL: [f64; 3] = [-6.0, 3.0, -14.0];
const NEAR_BRAM: [f64; 3] = [1500.0, 2.0, -896.0];

async fn server(backend: Backend) -> TestServer {
    TestServer::start_on_with(backend, |c| c.world.talk_cooldown = Duration::ZERO).await
}

/// The entry `npc` opens on for `token`'s player, standing at `position`.
async fn entry(server: &TestServer, token: &str, position: [f64; 3], npc: &str) -> String {
    let mut client = server.connect(token).await;
    client.move_to(position).await.expect("spawned");
    let opened = client.talk(npc).await.expect("talk");
    client.close().await;
    opened.entry
}

async fn store_of(server: &TestServer) -> std::sync::Arc<dyn Store> {
    store::connect(&server.config.database_url, ConnectOptions::default())
        .await
        .expect("store")
}

fn objectives(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

/// Sets a quest state up as the server writes it: one audited store step, keyed by `key`.
async fn given(store: &dyn Store, player: &str, key: &str, change: Change<'_>) {
    let step = Step {
        player,
        key,
        conversation: None,
        message: "setup",
        detail: None,
        recorded_us: 0,
        change,
        tutorial: None,
    };
    store.apply_step(&step).await.expect("set up");
}

async fn track(store: &dyn Store, player: &str, quest: &str) {
    let key = format!("track/{quest}");
    given(store, player, &key, Change::Track { quest: Some(quest) }).await;
}

async fn accept(store: &dyn Store, player: &str, quest: &str, objective_ids: &[&str]) {
    let objectives = objectives(objective_ids);
    let change = Change::Accept {
        quest,
        objectives: &objectives,
    };
    given(store, player, &format!("accept/{quest}"), change).await;
}

async fn complete(store: &dyn Store, player: &str, quest: &str, coins: i64, experience: i64) {
    let change = Change::Complete {
        quest,
        coins,
        experience,
        advances: &[],
    };
    given(store, player, &format!("complete/{quest}"), change).await;
}

async fn hattie_walks_the_resolver_order(backend: Backend) {
    let server = server(backend).await;
    let store = store_of(&server).await;
    let (token, player) = server.login_player("device-resolver-01").await;

    // 3. Nothing active, nothing tracked: the first available quest in content order.
    assert_eq!(
        entry(&server, &token, NEAR_HATTIE, "Hattie Brackwater").await,
        "HattiesShanty_Greet"
    );

    // 2. A tracked quest she offers beats the first available one.
    track(store.as_ref(), &player, "MendTheNets").await;
    assert_eq!(
        entry(&server, &token, NEAR_HATTIE, "Hattie Brackwater").await,
        "MendTheNets_Greet"
    );
    // A tracked quest the player cannot take yet (its prerequisite is open) is passed over.
    track(store.as_ref(), &player, "SilverSprats").await;
    assert_eq!(
        entry(&server, &token, NEAR_HATTIE, "Hattie Brackwater").await,
        "HattiesShanty_Greet"
    );

    // 1. An active quest beats any offer: it opens on its check node.
    accept(store.as_ref(), &player, "MendTheNets", &["FindTwine"]).await;
    assert_eq!(
        entry(&server, &token, NEAR_HATTIE, "Hattie Brackwater").await,
        "MendTheNets_Check"
    );

    // 4. Everything she offers is done: AllDone.
    complete(store.as_ref(), &player, "MendTheNets", 50, 20).await;
    for (quest, objective) in [
        ("HattiesShanty", "HearTheShanty"),
        ("SilverSprats", "CatchSprats"),
    ] {
        accept(store.as_ref(), &player, quest, &[objective]).await;
        complete(store.as_ref(), &player, quest, 1, 1).await;
    }
    assert_eq!(
        entry(&server, &token, NEAR_HATTIE, "Hattie Brackwater").await,
        "AllDone"
    );

    // 5. An NPC with no quests opens on her FirstNode. (Another player: walking over from
    // Hattie at once would be a teleport.)
    let (token, _) = server.login_player("device-resolver-03").await;
    assert_eq!(
        entry(&server, &token, NEAR_MARISOL, "Marisol").await,
        "Marisol_Hello"
    );
    store.close().await;
    server.stop().await.expect("clean shutdown");
}

async fn an_active_story_quest_opens_before_an_active_side_quest(backend: Backend) {
    let server = server(backend).await;
    let store = store_of(&server).await;
    let (token, player) = server.login_player("device-resolver-02").await;
    // Bram's side quest is accepted first, so content or acceptance order alone would pick it;
    // once the story quest is accepted too, Bram opens on the story quest.
    for (quest, objective, opens_on) in [
        ("DriftwoodChimes", "FindDriftwood", "DriftwoodChimes_Check"),
        (
            "KelpwickWelcome",
            "HearBramsWelcome",
            "KelpwickWelcome_Check",
        ),
    ] {
        accept(store.as_ref(), &player, quest, &[objective]).await;
        assert_eq!(
            entry(&server, &token, NEAR_BRAM, "Old Bram").await,
            opens_on
        );
    }
    store.close().await;
    server.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(
    hattie_walks_the_resolver_order,
    an_active_story_quest_opens_before_an_active_side_quest,
);
