//! The browser playground at `/playground`: a page where writers and programmers see the server
//! work. On by default in development, off with `--production` unless `--playground` asks for it.
//!
//! The page is static and build-free: `playground/index.html`, `app.js` and `style.css`, and the
//! TypeScript client's own ES modules (`clients/typescript/src/`) served under
//! `/playground/client/`, so the page speaks the protocol through that client and nothing else.
//! Everything is embedded at compile time: the binary serves it with no files beside it.
//!
//! Two read-only endpoints feed it: `/playground/api/world` (islands, NPCs with their positions
//! and conversations, locales) and `/playground/api/graph/{conversation}.svg`, a conversation's
//! graph laid out and drawn here on the server (`layout-rs`), with the walk's current node and
//! reachable set marked. Reloading content from the page goes through `POST /admin/reload` with
//! the service key the writer types in; nothing here writes.

use std::collections::HashSet;

use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::{Deserialize, Serialize};

use banter_dialogue::{DialogueGraph, VertexKind};

use crate::api_error::ApiError;
use crate::app::SharedApp;

/// The page and its own assets.
const PAGE: [(&str, &str, &str); 3] = [
    (
        "index.html",
        "text/html; charset=utf-8",
        include_str!("../../playground/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../playground/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../playground/style.css"),
    ),
];

/// The TypeScript client's modules, as they are in `clients/typescript/src/`.
const CLIENT: [(&str, &str); 14] = [
    (
        "index.js",
        include_str!("../../clients/typescript/src/index.js"),
    ),
    (
        "connection.js",
        include_str!("../../clients/typescript/src/connection.js"),
    ),
    (
        "login.js",
        include_str!("../../clients/typescript/src/login.js"),
    ),
    (
        "graph.js",
        include_str!("../../clients/typescript/src/graph.js"),
    ),
    (
        "walk.js",
        include_str!("../../clients/typescript/src/walk.js"),
    ),
    (
        "condition.js",
        include_str!("../../clients/typescript/src/condition.js"),
    ),
    (
        "payload.js",
        include_str!("../../clients/typescript/src/payload.js"),
    ),
    (
        "text.js",
        include_str!("../../clients/typescript/src/text.js"),
    ),
    (
        "errors.js",
        include_str!("../../clients/typescript/src/errors.js"),
    ),
    (
        "protocol.js",
        include_str!("../../clients/typescript/src/protocol.js"),
    ),
    (
        "protocol.generated.js",
        include_str!("../../clients/typescript/src/protocol.generated.js"),
    ),
    (
        "actions.generated.js",
        include_str!("../../clients/typescript/src/actions.generated.js"),
    ),
    (
        "ballot.js",
        include_str!("../../clients/typescript/src/ballot.js"),
    ),
    (
        "shared.js",
        include_str!("../../clients/typescript/src/shared.js"),
    ),
];

/// Graphs larger than this are not drawn: the layout is quadratic in places, and a picture of
/// thousands of boxes helps no writer.
pub const MAX_DRAWN_VERTICES: usize = 600;

/// Adds the playground's routes.
pub fn routes(router: Router<SharedApp>) -> Router<SharedApp> {
    router
        .route("/playground", get(|| async { asset("index.html") }))
        .route("/playground/", get(|| async { asset("index.html") }))
        .route(
            "/playground/{file}",
            get(|file: Result<Path<String>, PathRejection>| async move {
                match file {
                    Ok(Path(file)) => asset(&file),
                    Err(e) => ApiError::from(e).into_response(),
                }
            }),
        )
        .route("/playground/client/{file}", get(client_module))
        .route("/playground/api/world", get(world))
        .route("/playground/api/graph/{file}", get(graph_svg))
}

fn asset(file: &str) -> Response {
    match PAGE.iter().find(|(name, _, _)| *name == file) {
        Some((_, kind, body)) => ([(header::CONTENT_TYPE, *kind)], *body).into_response(),
        None => ApiError::NotFound(format!(
            "no playground file `{}`",
            banter_protocol::quoted_input(file)
        ))
        .into_response(),
    }
}

async fn client_module(file: Result<Path<String>, PathRejection>) -> Response {
    let Path(file) = match file {
        Ok(file) => file,
        Err(e) => return ApiError::from(e).into_response(),
    };
    match CLIENT.iter().find(|(name, _)| *name == file) {
        Some((_, body)) => (
            [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
            *body,
        )
            .into_response(),
        None => ApiError::NotFound(format!(
            "no client module `{}`",
            banter_protocol::quoted_input(&file)
        ))
        .into_response(),
    }
}

#[derive(Serialize)]
struct WorldView {
    islands: Vec<IslandView>,
    npcs: Vec<NpcView>,
    conversations: Vec<String>,
    locales: Vec<String>,
    source_locale: String,
    content_version: u64,
}

#[derive(Serialize)]
struct IslandView {
    id: String,
    name: String,
}

#[derive(Serialize)]
struct NpcView {
    id: String,
    name: String,
    island: String,
    position: [f64; 3],
    range: f64,
    conversation: String,
}

/// The world as the page draws it: content the game ships to every client anyway.
async fn world(State(app): State<SharedApp>) -> Response {
    let library = app.content.current();
    let content = &library.content;
    axum::Json(WorldView {
        islands: content
            .world
            .islands
            .iter()
            .map(|i| IslandView {
                id: i.id.clone(),
                name: i.name.clone(),
            })
            .collect(),
        npcs: content
            .world
            .npcs
            .iter()
            .map(|n| NpcView {
                id: n.id.clone(),
                name: n.name.clone(),
                island: n.island.clone(),
                position: n.position,
                range: n.range,
                conversation: n.conversation.clone(),
            })
            .collect(),
        conversations: content.conversations.keys().cloned().collect(),
        locales: content.locales.available(),
        source_locale: content.locales.settings.source.clone(),
        content_version: library.version,
    })
    .into_response()
}

#[derive(Deserialize)]
struct GraphQuery {
    /// The node the walk is on.
    current: Option<String>,
    /// The reachable set, comma-separated vertex names.
    reachable: Option<String>,
    /// Draw what players did (narrative analytics of the version served now): visits on each
    /// line, the split on each response. Needs the service key, as `/admin/analytics` does.
    #[serde(default)]
    analytics: bool,
    /// With `analytics`: only players who read in this locale.
    locale: Option<String>,
}

/// `GET /playground/api/graph/{conversation}.svg`.
async fn graph_svg(
    State(app): State<SharedApp>,
    file: Result<Path<String>, PathRejection>,
    headers: axum::http::HeaderMap,
    query: Result<Query<GraphQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Path(file) = file?;
    let Query(query) = query?;
    let name = file
        .strip_suffix(".svg")
        .ok_or_else(|| ApiError::NotFound("ask for <conversation>.svg".into()))?;
    let library = app.content.current();
    let graph = library.content.conversation(name).cloned().ok_or_else(|| {
        ApiError::NotFound(format!(
            "no conversation `{}`",
            banter_protocol::quoted_input(name)
        ))
    })?;
    if graph.len() > MAX_DRAWN_VERTICES {
        return Err(ApiError::BadRequest(format!(
            "`{name}` has {} vertices; the playground draws at most {MAX_DRAWN_VERTICES}",
            graph.len()
        )));
    }
    let mut marks = Marks {
        current: query.current,
        reachable: query
            .reachable
            .unwrap_or_default()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        ..Marks::default()
    };
    if query.analytics {
        crate::auth::require_service_key(&headers, &app.config.service_key)?;
        let asked = crate::analytics::AnalyticsQuery {
            conversation: Some(name.to_owned()),
            version: None,
            locale: query.locale,
        };
        let answer = crate::analytics::answer(app.store.as_ref(), Some(&library), &asked).await?;
        if let crate::analytics::Answer::Conversation(report) = answer {
            marks.overlay(&report);
        }
    }
    // The layout is CPU work: off the runtime's workers, and a panic in the layout crate is a
    // 500 with a reference, not a dropped connection.
    let drawn = tokio::task::spawn_blocking(move || {
        std::panic::catch_unwind(|| draw(&graph, &marks)).map_err(|_| "the layout panicked")
    })
    .await;
    match drawn {
        Ok(Ok(svg)) => Ok(([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response()),
        Ok(Err(why)) => Err(ApiError::Internal {
            reference: crate::incident::report("playground layout", &why),
        }),
        Err(e) => Err(ApiError::Internal {
            reference: crate::incident::report("playground layout", &e),
        }),
    }
}

/// What the picture marks.
#[derive(Debug, Default)]
pub struct Marks {
    pub current: Option<String>,
    pub reachable: HashSet<String>,
    /// Narrative analytics: visits per line.
    pub visits: std::collections::HashMap<String, u64>,
    /// Narrative analytics: per response, how often it was chosen and its share of its line's
    /// choices.
    pub chosen: std::collections::HashMap<String, (u64, f64)>,
}

impl Marks {
    /// Takes a conversation's report onto the picture.
    pub fn overlay(&mut self, report: &crate::analytics::report::ConversationReport) {
        self.visits = report
            .lines
            .iter()
            .map(|l| (l.line.clone(), l.visits))
            .collect();
        self.chosen = report
            .choices
            .iter()
            .flat_map(|c| &c.responses)
            .map(|r| (r.response.clone(), (r.count, r.share)))
            .collect();
    }

    /// The analytics line under a vertex's label, if the overlay has one for it.
    fn analytics_note(&self, vertex: &banter_dialogue::Vertex) -> Option<String> {
        let name = &*vertex.name;
        match vertex.kind {
            VertexKind::Prompt if !self.visits.is_empty() || !self.chosen.is_empty() => Some(
                format!("visits {}", self.visits.get(name).copied().unwrap_or(0)),
            ),
            VertexKind::Response if !self.visits.is_empty() || !self.chosen.is_empty() => {
                let (count, share) = self.chosen.get(name).copied().unwrap_or((0, 0.0));
                Some(format!("chosen {count} ({:.0}%)", share * 100.0))
            }
            _ => None,
        }
    }
}

/// Lays out and draws a conversation: NPC lines as boxes (name and the start of the text),
/// responses as rounded boxes, branches small; the current node filled gold, the reachable set
/// light green, the rest white.
pub fn draw(graph: &DialogueGraph, marks: &Marks) -> String {
    use layout::backends::svg::SVGWriter;
    use layout::core::base::Orientation;
    use layout::core::color::Color;
    use layout::core::geometry::Point;
    use layout::core::style::StyleAttr;
    use layout::std_shapes::shapes::{Arrow, Element, ShapeKind};
    use layout::topo::layout::VisualGraph;

    let mut visual = VisualGraph::new(Orientation::TopToBottom);
    let mut handles = Vec::with_capacity(graph.len());
    for (_, vertex) in graph.vertices() {
        let name = vertex.name.to_string();
        let fill = if marks.current.as_deref() == Some(name.as_str()) {
            "gold"
        } else if marks.reachable.contains(&name) {
            "palegreen"
        } else {
            "white"
        };
        let (mut label, rounded, mut size) = match vertex.kind {
            VertexKind::Root => ("start".to_owned(), 20, Point::new(60., 30.)),
            VertexKind::Prompt => (
                format!("{name}\n{}", short(&vertex.text, 28)),
                0,
                Point::new(220., 50.),
            ),
            VertexKind::Response => (short(&vertex.text, 30), 12, Point::new(220., 36.)),
            _ => (name.clone(), 20, Point::new(60., 30.)),
        };
        if let Some(note) = marks.analytics_note(vertex) {
            label.push('\n');
            label.push_str(&note);
            size.y += 16.;
        }
        let look = StyleAttr::new(
            Color::fast("black"),
            1,
            Some(Color::fast(fill)),
            rounded,
            12,
        );
        let element = Element::create(
            ShapeKind::new_box(&label),
            look,
            Orientation::TopToBottom,
            size,
        );
        handles.push(visual.add_node(element));
    }
    for (id, _) in graph.vertices() {
        for next in graph.outputs(id) {
            if let (Some(from), Some(to)) = (handles.get(id.index()), handles.get(next.index())) {
                visual.add_edge(Arrow::simple(""), *from, *to);
            }
        }
    }
    let mut svg = SVGWriter::new();
    visual.do_it(false, false, false, &mut svg);
    svg.finalize()
}

/// The first `max` characters of a line's text on one line, with `…` when cut.
fn short(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_module_is_served() {
        let src =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/typescript/src");
        let mut missing = Vec::new();
        for entry in std::fs::read_dir(&src).expect("the TypeScript client's sources") {
            let name = entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            if name.ends_with(".js") && !CLIENT.iter().any(|(served, _)| *served == name) {
                missing.push(name);
            }
        }
        assert!(
            missing.is_empty(),
            "the playground imports every client module; add to CLIENT: {missing:?}"
        );
    }

    #[test]
    fn every_sample_conversation_draws_with_its_marks() {
        let content = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../content");
        let library = crate::served::ContentVersion::load(&content, 1).expect("sample");
        for (name, graph) in &library.content.conversations {
            let marks = Marks {
                current: Some(format!("{name}_Hello")),
                reachable: HashSet::from([format!("{name}_Hello_r1")]),
                ..Marks::default()
            };
            let svg = draw(graph, &marks);
            if std::env::var_os("BANTER_DUMP_SVG").is_some() {
                let _ = std::fs::write(format!("/tmp/{name}.svg"), &svg);
            }
            assert!(svg.contains("<svg"), "{name}");
            if graph.find(&format!("{name}_Hello")).is_some() {
                assert!(svg.contains("#ffd700"), "{name}: the current line is gold");
            }
            if graph.find(&format!("{name}_Hello_r1")).is_some() {
                assert!(
                    svg.contains("#98fb98"),
                    "{name}: the reachable set is green"
                );
            }
        }
    }

    #[test]
    fn the_analytics_overlay_writes_visits_on_lines_and_the_split_on_responses() {
        let content = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../content");
        let library = crate::served::ContentVersion::load(&content, 1).expect("sample");
        let graph = &library.content.conversations["Pim"];
        let mut marks = Marks::default();
        marks.visits.insert("PimsTideTale_Greet".into(), 12);
        marks
            .chosen
            .insert("PimsTideTale_Greet_r1".into(), (8, 0.6667));
        let svg = draw(graph, &marks);
        assert!(svg.contains("visits 12"), "the greeting's visits");
        assert!(svg.contains("chosen 8 (67%)"), "the first response's split");
        // Lines and responses nobody reached say so: a writer sees what players never saw.
        assert!(svg.contains("visits 0"));
        assert!(svg.contains("chosen 0 (0%)"));
        // Without analytics, no counts at all.
        assert!(!draw(graph, &Marks::default()).contains("visits"));
    }

    #[test]
    fn long_text_is_cut_on_characters() {
        assert_eq!(short("short", 10), "short");
        assert_eq!(short("ヤドカリを数えてるの", 3), "ヤドカ…");
        assert_eq!(short("two\nlines", 20), "two lines");
    }
}
