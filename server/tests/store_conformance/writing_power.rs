//! Writing power (docs/PROTOCOL.md, section 10.1): story variables, set by an audited step under
//! its idempotency key, and visit counts (lines shown, responses picked, conversations opened),
//! added up by `record_visits`; both read back with the player, each player's their own.

use std::collections::BTreeMap;
use std::sync::Arc;

use banter_server::store::{
    Applied, Change, ConversationVisits, PlayerRecord, Step, Store, StoreError, Visit, VisitDelta,
};

use crate::store_support::{OpenStore, TestDb};
use crate::{Writes, at_once, load, snapshot};

fn set<'a>(player: &'a str, key: &'a str, name: &'a str, value: &'a str) -> Step<'a> {
    Step {
        player,
        key,
        conversation: Some("Wren"),
        message: "action",
        detail: Some("SetVariable"),
        recorded_us: 1,
        change: Change::SetVariable { name, value },
        tutorial: None,
    }
}

fn delta(node: &str, added: u32, last: u64) -> VisitDelta {
    VisitDelta {
        node: node.to_owned(),
        added,
        last,
    }
}

fn variables(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

/// A conversation's visits: its opens and (node, count, last) for each node.
fn visited(opens: u32, nodes: &[(&str, u32, u64)]) -> ConversationVisits {
    ConversationVisits {
        opens,
        nodes: nodes
            .iter()
            .map(|(node, count, last)| {
                let visit = Visit {
                    count: *count,
                    last: *last,
                };
                ((*node).to_owned(), visit)
            })
            .collect(),
    }
}

use super::steps::rows_with_key;

async fn a_fresh_player_has_no_variables_and_no_visits(db: &TestDb) {
    let store = db.open().await;
    let record = load(store.as_ref(), "p1").await;
    assert_eq!(record, PlayerRecord::default());
    assert!(record.variables.is_empty());
    assert!(record.visits.is_empty());
    // A step of another kind leaves them empty too.
    let stepped = store
        .step_of("p2", Change::Profile, None)
        .await
        .expect("profile");
    assert!(stepped.record.variables.is_empty() && stepped.record.visits.is_empty());
}

async fn a_set_variable_is_loaded_back_and_setting_it_again_overwrites_it(db: &TestDb) {
    let store = db.open().await;
    assert_eq!(store.player_exists("p1").await, Ok(false));
    let stepped = store
        .apply_step(&set("p1", "c1/0/0", "MetWren", "true"))
        .await
        .expect("set");
    assert_eq!(stepped.applied, Applied::VariableSet);
    assert_eq!(stepped.record.variables, variables(&[("MetWren", "true")]));
    assert_eq!(
        store.player_exists("p1").await,
        Ok(true),
        "the profile is created"
    );
    assert_eq!(stepped.record, load(store.as_ref(), "p1").await);
    assert_eq!(rows_with_key(store.as_ref(), "p1", "c1/0/0").await, 1);
    assert_eq!(store.step_applied("p1", "c1/0/0").await, Ok(true));

    store
        .apply_step(&set("p1", "c1/0/1", "Mood", "calm"))
        .await
        .expect("set");
    let stepped = store
        .apply_step(&set("p1", "c1/0/2", "MetWren", "false"))
        .await
        .expect("set again");
    assert_eq!(stepped.applied, Applied::VariableSet);
    let expected = variables(&[("MetWren", "false"), ("Mood", "calm")]);
    assert_eq!(stepped.record.variables, expected, "overwritten, one row");
    assert_eq!(load(store.as_ref(), "p1").await.variables, expected);
    // Any text the store may hold: a negative integer, spaces, the empty string.
    for (key, value) in [("c1/0/3", "-3"), ("c1/0/4", "a sunny day"), ("c1/0/5", "")] {
        store
            .apply_step(&set("p1", key, "Mood", value))
            .await
            .expect("set");
        assert_eq!(
            load(store.as_ref(), "p1").await.variables.get("Mood"),
            Some(&value.to_owned())
        );
    }
    // A new store on the same database (a restart, another instance) reads the same.
    let other = db.open().await;
    assert_eq!(
        load(other.as_ref(), "p1").await,
        load(store.as_ref(), "p1").await
    );
}

async fn a_retried_variable_step_applies_once(db: &TestDb) {
    let store = db.open().await;
    store
        .apply_step(&set("p1", "c1/2/0", "NetsMended", "1"))
        .await
        .expect("set");
    let before = snapshot(store.as_ref(), "p1").await;
    // The retry carries the same key; whatever value it names, nothing changes.
    for value in ["1", "2"] {
        let again = store
            .apply_step(&set("p1", "c1/2/0", "NetsMended", value))
            .await;
        assert!(
            matches!(&again, Err(StoreError::StepApplied { key }) if key == "c1/2/0"),
            "{again:?}"
        );
    }
    assert_eq!(snapshot(store.as_ref(), "p1").await, before);
    assert_eq!(rows_with_key(store.as_ref(), "p1", "c1/2/0").await, 1);
    // Retried at once on two stores (two instances): one lands.
    let outcomes = at_once(
        &store,
        &db.open().await,
        6,
        |s: Arc<dyn Store>| async move {
            s.apply_step(&set("p1", "c1/2/1", "NetsMended", "2"))
                .await
                .map(|stepped| stepped.applied)
        },
    )
    .await;
    let landed = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(landed, 1, "{outcomes:?}");
    assert!(
        outcomes.iter().all(|o| matches!(
            o,
            Ok(Applied::VariableSet) | Err(StoreError::StepApplied { .. })
        )),
        "{outcomes:?}"
    );
    assert_eq!(rows_with_key(store.as_ref(), "p1", "c1/2/1").await, 1);
    assert_eq!(
        load(store.as_ref(), "p1").await.variables,
        variables(&[("NetsMended", "2")])
    );
}

async fn visits_add_up_across_calls_and_keep_the_latest_showing(db: &TestDb) {
    let store = db.open().await;
    store
        .record_visits(
            "p1",
            "Wren",
            1,
            &[delta("Wren_Hello", 1, 10), delta("Wren_Hello_r2", 1, 11)],
        )
        .await
        .expect("recorded");
    assert_eq!(
        load(store.as_ref(), "p1").await.visits,
        BTreeMap::from([(
            "Wren".to_owned(),
            visited(1, &[("Wren_Hello", 1, 10), ("Wren_Hello_r2", 1, 11)])
        )])
    );
    // A second visit: counts add up, `last` keeps the larger (an older `last` does not win),
    // deltas of one node in one call add up, and a new node is inserted.
    store
        .record_visits(
            "p1",
            "Wren",
            1,
            &[
                delta("Wren_Hello", 2, 30),
                delta("Wren_Hello_r2", 1, 5),
                delta("Wren_Again", 1, 31),
                delta("Wren_Again", 1, 29),
            ],
        )
        .await
        .expect("recorded");
    let expected = visited(
        2,
        &[
            ("Wren_Again", 2, 31),
            ("Wren_Hello", 3, 30),
            ("Wren_Hello_r2", 2, 11),
        ],
    );
    assert_eq!(load(store.as_ref(), "p1").await.visits["Wren"], expected);
    // Opens alone, nodes alone, another conversation; nothing at all changes nothing.
    store
        .record_visits("p1", "Wren", 3, &[])
        .await
        .expect("opens");
    store
        .record_visits("p1", "Pim", 0, &[delta("Pim_Hi", 1, 40)])
        .await
        .expect("nodes");
    store
        .record_visits("p1", "Gull", 0, &[])
        .await
        .expect("nothing");
    let visits = load(store.as_ref(), "p1").await.visits;
    assert_eq!(visits.len(), 2, "{visits:?}");
    assert_eq!(visits["Wren"].opens, 5);
    assert_eq!(visits["Wren"].nodes, expected.nodes);
    assert_eq!(visits["Pim"], visited(0, &[("Pim_Hi", 1, 40)]));
    // Counts stop at u32::MAX; `last` goes up to i64::MAX.
    let top = u64::try_from(i64::MAX).expect("fits");
    store
        .record_visits(
            "p1",
            "Pim",
            u32::MAX,
            &[delta("Pim_Hi", u32::MAX, top), delta("Pim_Hi", 7, 1)],
        )
        .await
        .expect("recorded");
    store
        .record_visits("p1", "Pim", 1, &[delta("Pim_Hi", 1, 2)])
        .await
        .expect("recorded");
    assert_eq!(
        load(store.as_ref(), "p1").await.visits["Pim"],
        visited(u32::MAX, &[("Pim_Hi", u32::MAX, top)])
    );
}

async fn visits_recorded_at_once_on_two_stores_all_count(db: &TestDb) {
    let store = db.open().await;
    let other = db.open().await;
    let outcomes = at_once(&store, &other, 8, |s: Arc<dyn Store>| async move {
        let deltas = [delta("Wren_Hello", 1, 7), delta("Wren_Bye", 2, 8)];
        s.record_visits("p1", "Wren", 1, &deltas).await
    })
    .await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(
        load(store.as_ref(), "p1").await.visits["Wren"],
        visited(8, &[("Wren_Bye", 16, 8), ("Wren_Hello", 8, 7)])
    );
}

async fn variables_and_visits_come_back_in_a_steps_record(db: &TestDb) {
    let store = db.open().await;
    store
        .record_visits("p1", "Wren", 1, &[delta("Wren_Hello", 1, 3)])
        .await
        .expect("recorded");
    store
        .apply_step(&set("p1", "c1/0/0", "MetWren", "true"))
        .await
        .expect("set");
    // A step of another kind reads them back inside its transaction too.
    let stepped = store
        .step_of("p1", Change::Track { quest: Some("q1") }, None)
        .await
        .expect("tracked");
    assert_eq!(stepped.applied, Applied::Tracked);
    assert_eq!(stepped.record.variables, variables(&[("MetWren", "true")]));
    assert_eq!(
        stepped.record.visits,
        BTreeMap::from([("Wren".to_owned(), visited(1, &[("Wren_Hello", 1, 3)]))])
    );
    assert_eq!(stepped.record, load(store.as_ref(), "p1").await);
}

async fn players_do_not_see_each_others_variables_or_visits(db: &TestDb) {
    let store = db.open().await;
    store
        .apply_step(&set("p1", "k", "Mood", "sunny"))
        .await
        .expect("set");
    store
        .apply_step(&set("p2", "k", "Mood", "grey"))
        .await
        .expect("set: the same key and name, another player");
    store
        .record_visits("p1", "Wren", 1, &[delta("Wren_Hello", 1, 1)])
        .await
        .expect("recorded");
    store
        .record_visits("p2", "Wren", 2, &[delta("Wren_Again", 4, 9)])
        .await
        .expect("recorded");
    let (p1, p2, p3) = (
        load(store.as_ref(), "p1").await,
        load(store.as_ref(), "p2").await,
        load(store.as_ref(), "p3").await,
    );
    assert_eq!(p1.variables, variables(&[("Mood", "sunny")]));
    assert_eq!(p2.variables, variables(&[("Mood", "grey")]));
    assert_eq!(p1.visits["Wren"], visited(1, &[("Wren_Hello", 1, 1)]));
    assert_eq!(p2.visits["Wren"], visited(2, &[("Wren_Again", 4, 9)]));
    assert_eq!(p3, PlayerRecord::default());
}

async fn recording_visits_writes_nothing_else(db: &TestDb) {
    let store = db.open().await;
    store
        .record_visits("p1", "Wren", 1, &[delta("Wren_Hello", 1, 1)])
        .await
        .expect("recorded");
    assert_eq!(store.player_exists("p1").await, Ok(false), "no profile");
    assert_eq!(
        store.audit_for_player("p1", 10).await,
        Ok(vec![]),
        "no audit"
    );
    assert_eq!(db.scalar("SELECT COUNT(*) FROM visits").await, 2);
    assert_eq!(db.scalar("SELECT COUNT(*) FROM story_variables").await, 0);
}

async fn bad_variables_and_visits_are_refused_and_change_nothing(db: &TestDb) {
    let store = db.open().await;
    store
        .apply_step(&set("p1", "k0", "Mood", "calm"))
        .await
        .expect("set");
    store
        .record_visits("p1", "Wren", 1, &[delta("Wren_Hello", 1, 1)])
        .await
        .expect("recorded");
    let before = snapshot(store.as_ref(), "p1").await;
    let long = "x".repeat(129);
    for (key, name, value) in [
        ("k1", "", "v"),
        ("k2", long.as_str(), "v"),
        ("k3", "Mood", long.as_str()),
        ("k4", "Mood", "a\0b"),
        ("k5", "Mo\nod", "v"),
    ] {
        let refused = store.apply_step(&set("p1", key, name, value)).await;
        assert!(
            matches!(refused, Err(StoreError::InvalidInput(_))),
            "{key}: {refused:?}"
        );
        assert_eq!(store.step_applied("p1", key).await, Ok(false), "{key}");
    }
    let too_late = u64::try_from(i64::MAX).expect("fits") + 1;
    for (player, conversation, deltas) in [
        ("", "Wren", vec![delta("Wren_Hello", 1, 1)]),
        ("p1", "", vec![delta("Wren_Hello", 1, 1)]),
        ("p1", long.as_str(), vec![]),
        (
            "p1",
            "Wren",
            vec![delta("Wren_Hello", 1, 1), delta("", 1, 1)],
        ),
        (
            "p1",
            "Wren",
            vec![delta("Wren_Hello", 1, 1), delta(&long, 1, 1)],
        ),
        ("p1", "Wren", vec![delta("Wren_Hello", 1, too_late)]),
    ] {
        let refused = store.record_visits(player, conversation, 1, &deltas).await;
        assert!(
            matches!(refused, Err(StoreError::InvalidInput(_))),
            "{player:?} {conversation:?} {deltas:?}: {refused:?}"
        );
    }
    assert_eq!(
        snapshot(store.as_ref(), "p1").await,
        before,
        "nothing changed"
    );
}

on_both_backends!(
    a_fresh_player_has_no_variables_and_no_visits,
    a_set_variable_is_loaded_back_and_setting_it_again_overwrites_it,
    a_retried_variable_step_applies_once,
    visits_add_up_across_calls_and_keep_the_latest_showing,
    visits_recorded_at_once_on_two_stores_all_count,
    variables_and_visits_come_back_in_a_steps_record,
    players_do_not_see_each_others_variables_or_visits,
    recording_visits_writes_nothing_else,
    bad_variables_and_visits_are_refused_and_change_nothing,
);
