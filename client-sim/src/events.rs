//! The trusted game server's side: the catches and finds a quest's objectives count, posted to
//! `/internal/events` with the service key through the client library (docs/PROTOCOL.md section
//! 14). The load tool and the interactive client use it to play quests that need world
//! progress.

use banter_dialogue::content::{ObjectiveKind, QuestDef};

use crate::error::Result;
use crate::facts::ClientFacts;
use crate::http::{Endpoint, Http};

pub use banter_client::http::Advanced;

/// The event body that completes one catch or find objective of `quest` by `amount`.
pub fn event_body(
    event_id: &str,
    player: &str,
    quest: &QuestDef,
    objective: usize,
    amount: u32,
) -> Option<String> {
    let o = quest.objectives.get(objective)?;
    let island = o.island.clone().unwrap_or_else(|| "anywhere".to_owned());
    let mut body = serde_json::json!({
        "event_id": event_id,
        "player": player,
        "island": island,
        "amount": amount.max(1),
    });
    match o.kind {
        ObjectiveKind::Catch => {
            body["kind"] = "fish_caught".into();
            body["species"] = o
                .species
                .clone()
                .unwrap_or_else(|| "Any Fish".to_owned())
                .into();
        }
        ObjectiveKind::Find => {
            body["kind"] = "item_found".into();
            body["item"] = o.id.clone().into();
        }
        ObjectiveKind::Talk => return None,
    }
    if let Some(rarity) = &o.rarity {
        body["rarity"] = rarity.clone().into();
    }
    Some(body.to_string())
}

/// Posts one event; the objectives it advanced. A `409` (already applied) counts as success.
pub async fn post(http: &Http, service_key: &str, body: &str) -> Result<Vec<Advanced>> {
    Ok(http.post_event(service_key, body).await?.advanced())
}

/// Reports what the player still needs for every catch and find objective of `quest`, and
/// updates the facts from the answers. Returns how many events were posted.
pub async fn complete_world_objectives(
    endpoint: &Endpoint,
    service_key: &str,
    player: &str,
    quest: &QuestDef,
    facts: &mut ClientFacts,
    event_prefix: &str,
) -> Result<u32> {
    let http = Http::new(endpoint.clone())?;
    let mut posted = 0;
    for (i, o) in quest.objectives.iter().enumerate() {
        let have = facts.progress(&quest.id, &o.id);
        if o.kind == ObjectiveKind::Talk || have >= o.target {
            continue;
        }
        let id = format!("{event_prefix}-{}-{}-{have}", quest.id, o.id);
        let Some(body) = event_body(&id, player, quest, i, o.target - have) else {
            continue;
        };
        for advanced in post(&http, service_key, &body).await? {
            facts.sheet.progress.insert(
                format!("{}/{}", advanced.quest, advanced.objective),
                advanced.progress,
            );
        }
        posted += 1;
    }
    Ok(posted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use banter_dialogue::content::ObjectiveDef;

    #[test]
    fn bodies_follow_the_objective_filters() {
        let quest = QuestDef {
            objectives: vec![
                ObjectiveDef {
                    id: "Eels".into(),
                    kind: ObjectiveKind::Catch,
                    target: 2,
                    island: Some("gullrock".into()),
                    species: Some("Glass Eel".into()),
                    rarity: Some("rare".into()),
                },
                ObjectiveDef {
                    id: "Hear".into(),
                    kind: ObjectiveKind::Talk,
                    target: 1,
                    island: None,
                    species: None,
                    rarity: None,
                },
            ],
            ..QuestDef::minimal("Q", &[])
        };
        let body: serde_json::Value =
            serde_json::from_str(&event_body("e1", "p", &quest, 0, 2).expect("a catch"))
                .expect("json");
        assert_eq!(body["kind"], "fish_caught");
        assert_eq!(body["species"], "Glass Eel");
        assert_eq!(body["rarity"], "rare");
        assert_eq!(body["island"], "gullrock");
        assert_eq!(body["amount"], 2);
        assert_eq!(
            event_body("e2", "p", &quest, 1, 1),
            None,
            "talk is no event"
        );
    }
}
