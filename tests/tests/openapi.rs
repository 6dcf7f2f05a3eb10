//! docs/openapi.json against the real routes. The file is OpenAPI 3.1 and whole in itself (every
//! reference resolves, every example fits its schema); it names exactly the paths the server's
//! source routes; and a real server (bench echo and playground on, so every conditional route
//! exists) answers every documented operation with a documented status, a documented content
//! type and a body its schema accepts, and every other method with the router's `405`. With
//! every flag off, only the routes marked `x-banter-only-when` are gone. `GET /openapi.json`
//! serves the file byte for byte.
//!
//! Requests go out on raw TCP connections here: the test reads each answer's `Content-Type` and
//! exact bytes, and writes WebSocket upgrade heads by hand.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use banter_e2e::{PATIENCE, TestServer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The operations a path item may hold.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The methods sent to every path: those it does not document must get the router's `405`.
const PROBED_METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

const HTTP_1_1: &str = "HTTP/1.1";

/// The headers of a WebSocket upgrade (RFC 6455, section 4.1).
const UPGRADE: [(&str, &str); 4] = [
    ("Connection", "Upgrade"),
    ("Upgrade", "websocket"),
    ("Sec-WebSocket-Version", "13"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
];

/// The schema keywords the validator below checks.
const CHECKED_KEYWORDS: [&str; 17] = [
    "$ref",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "enum",
    "const",
    "oneOf",
    "anyOf",
    "allOf",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
];

/// Schema keywords allowed in the file that the validator does not check.
const UNCHECKED_KEYWORDS: [&str; 6] = [
    "description",
    "title",
    "examples",
    "default",
    "pattern",
    "format",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn spec_bytes() -> Vec<u8> {
    let path = workspace().join("docs/openapi.json");
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn spec() -> Value {
    serde_json::from_slice(&spec_bytes()).expect("docs/openapi.json is JSON")
}

// ---------------------------------------------------------------------------------------------
// Reading the document.

/// One operation: a method of a path.
struct Operation<'a> {
    path: &'a str,
    method: &'static str,
    item: &'a Value,
    op: &'a Value,
}

impl Operation<'_> {
    fn name(&self) -> String {
        format!("{} {}", self.method.to_uppercase(), self.path)
    }
}

fn operations(doc: &Value) -> Vec<Operation<'_>> {
    let paths = doc["paths"].as_object().expect("`paths` is an object");
    let mut out = Vec::new();
    for (path, item) in paths {
        for method in METHODS {
            if let Some(op) = item.get(method) {
                out.push(Operation {
                    path,
                    method,
                    item,
                    op,
                });
            }
        }
    }
    out
}

fn operation<'a>(doc: &'a Value, path: &str, method: &str) -> Operation<'a> {
    operations(doc)
        .into_iter()
        .find(|o| o.path == path && o.method.eq_ignore_ascii_case(method))
        .unwrap_or_else(|| panic!("{method} {path} is not documented"))
}

/// The value a local reference (`#/components/...`) names.
fn lookup<'a>(doc: &'a Value, reference: &str) -> &'a Value {
    let pointer = reference
        .strip_prefix('#')
        .unwrap_or_else(|| panic!("only local references: {reference}"));
    doc.pointer(pointer)
        .unwrap_or_else(|| panic!("{reference} names nothing"))
}

/// `value`, or what its `$ref` names (followed to the end).
fn resolve<'a>(doc: &'a Value, mut value: &'a Value) -> &'a Value {
    for _ in 0..16 {
        match value.get("$ref").and_then(Value::as_str) {
            Some(reference) => value = lookup(doc, reference),
            None => return value,
        }
    }
    panic!("a reference cycle")
}

/// The operation's parameters, its path item's included.
fn parameters<'a>(doc: &'a Value, op: &Operation<'a>) -> Vec<&'a Value> {
    [op.item.get("parameters"), op.op.get("parameters")]
        .into_iter()
        .flatten()
        .flat_map(|list| list.as_array().expect("`parameters` is an array"))
        .map(|p| resolve(doc, p))
        .collect()
}

/// A parameter's example: its own, or its schema's first.
fn example_of(parameter: &Value) -> Option<&Value> {
    parameter
        .get("example")
        .or_else(|| parameter.pointer("/schema/examples/0"))
}

/// The security schemes any of the operation's requirements names.
fn security(doc: &Value, op: &Operation<'_>) -> BTreeSet<String> {
    op.op
        .get("security")
        .or_else(|| doc.get("security"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|requirement| {
            requirement
                .as_object()
                .expect("a security requirement is an object")
                .keys()
                .cloned()
        })
        .collect()
}

/// The names in a path template's `{...}`.
fn template_names(path: &str) -> BTreeSet<String> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(str::to_owned)
        .collect()
}

/// Calls `visit` on every value of the document with its JSON pointer.
fn walk<'a>(value: &'a Value, at: &str, visit: &mut dyn FnMut(&str, &'a Value)) {
    visit(at, value);
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                walk(child, &format!("{at}/{key}"), visit);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                walk(child, &format!("{at}/{i}"), visit);
            }
        }
        _ => {}
    }
}

/// A media type without its parameters, in lower case.
fn essence(media_type: &str) -> String {
    media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

// ---------------------------------------------------------------------------------------------
// A JSON Schema validator for the keywords the file uses.

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "array" => value.is_array(),
        "object" => value.is_object(),
        other => panic!("unknown JSON Schema type `{other}`"),
    }
}

/// Every way `value` breaks `schema`, each with where (empty: it fits).
fn validate(doc: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let mut errors = Vec::new();
    check(doc, schema, value, at, &mut errors);
    errors
}

fn check(doc: &Value, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let keywords = match schema {
        Value::Object(keywords) => keywords,
        Value::Bool(true) => return,
        Value::Bool(false) => {
            errors.push(format!("{at}: nothing is allowed here"));
            return;
        }
        other => panic!("{at}: `{other}` is not a schema"),
    };
    if let Some(reference) = keywords.get("$ref").and_then(Value::as_str) {
        check(doc, lookup(doc, reference), value, at, errors);
    }
    if let Some(types) = keywords.get("type") {
        let names: Vec<&str> = match types {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            other => panic!("{at}: `type` is {other}"),
        };
        if !names.iter().any(|name| is_type(value, name)) {
            errors.push(format!("{at}: {value} is not of type {names:?}"));
            return;
        }
    }
    if let Some(allowed) = keywords.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        errors.push(format!("{at}: {value} is not one of {allowed:?}"));
    }
    if let Some(constant) = keywords.get("const")
        && constant != value
    {
        errors.push(format!("{at}: {value} is not {constant}"));
    }
    // allOf: every branch fits; anyOf: one or more; oneOf: exactly one.
    for (keyword, need) in [
        ("allOf", None),
        ("anyOf", Some((1, usize::MAX))),
        ("oneOf", Some((1, 1))),
    ] {
        let Some(branches) = keywords.get(keyword).and_then(Value::as_array) else {
            continue;
        };
        let mut fits = 0;
        for (i, branch) in branches.iter().enumerate() {
            let branch_errors = validate(doc, branch, value, at);
            if branch_errors.is_empty() {
                fits += 1;
            } else if need.is_none() {
                errors.push(format!("{at}: allOf[{i}]: {}", branch_errors.join("; ")));
            }
        }
        if let Some((least, most)) = need
            && !(least..=most).contains(&fits)
        {
            errors.push(format!(
                "{at}: {fits} of the {} branches of {keyword} fit",
                branches.len()
            ));
        }
    }
    match value {
        Value::Object(fields) => check_object(doc, keywords, fields, at, errors),
        Value::Array(items) => {
            if let Some(items_schema) = keywords.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(doc, items_schema, item, &format!("{at}[{i}]"), errors);
                }
            }
            let count = items.len() as f64;
            if out_of_bounds(keywords, "minItems", "maxItems", count) {
                errors.push(format!("{at}: {count} items is out of bounds"));
            }
        }
        Value::String(text) => {
            let length = text.chars().count() as f64;
            if out_of_bounds(keywords, "minLength", "maxLength", length) {
                errors.push(format!(
                    "{at}: a string of {length} characters is out of bounds"
                ));
            }
        }
        Value::Number(number) => {
            let n = number.as_f64().expect("a JSON number is an f64");
            if out_of_bounds(keywords, "minimum", "maximum", n) {
                errors.push(format!("{at}: {n} is out of bounds"));
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

/// Whether `n` is below the schema's `min` keyword or above its `max` keyword.
fn out_of_bounds(keywords: &serde_json::Map<String, Value>, min: &str, max: &str, n: f64) -> bool {
    keywords
        .get(min)
        .and_then(Value::as_f64)
        .is_some_and(|min| n < min)
        || keywords
            .get(max)
            .and_then(Value::as_f64)
            .is_some_and(|max| n > max)
}

fn check_object(
    doc: &Value,
    keywords: &serde_json::Map<String, Value>,
    fields: &serde_json::Map<String, Value>,
    at: &str,
    errors: &mut Vec<String>,
) {
    for name in keywords
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !fields.contains_key(name) {
            errors.push(format!("{at}: `{name}` is missing"));
        }
    }
    let properties = keywords.get("properties").and_then(Value::as_object);
    for (name, field) in fields {
        let at = format!("{at}.{name}");
        match properties.and_then(|p| p.get(name)) {
            Some(schema) => check(doc, schema, field, &at, errors),
            None => match keywords.get("additionalProperties") {
                Some(Value::Bool(false)) => errors.push(format!("{at}: not a documented field")),
                Some(schema) => check(doc, schema, field, &at, errors),
                None => {}
            },
        }
    }
}

/// Every keyword of `schema` and the schemas inside it is one the validator knows.
fn known_keywords(schema: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(keywords) = schema.as_object() else {
        return;
    };
    for (keyword, value) in keywords {
        if !CHECKED_KEYWORDS.contains(&keyword.as_str())
            && !UNCHECKED_KEYWORDS.contains(&keyword.as_str())
        {
            errors.push(format!(
                "{at}: schema keyword `{keyword}` is unknown to this test's validator"
            ));
        }
        match keyword.as_str() {
            "properties" => {
                for (name, property) in value.as_object().into_iter().flatten() {
                    known_keywords(property, &format!("{at}/properties/{name}"), errors);
                }
            }
            "items" | "additionalProperties" => {
                known_keywords(value, &format!("{at}/{keyword}"), errors);
            }
            "allOf" | "anyOf" | "oneOf" => {
                for (i, branch) in value.as_array().into_iter().flatten().enumerate() {
                    known_keywords(branch, &format!("{at}/{keyword}/{i}"), errors);
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The routes in the server's source.

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `.route("...")` path literal in server/src, with the files that route it.
fn routes_in_source() -> BTreeMap<String, BTreeSet<String>> {
    let src = workspace().join("server/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut routes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        let name = file
            .strip_prefix(&src)
            .expect("under server/src")
            .display()
            .to_string();
        for other in [
            ".nest(",
            ".nest_service(",
            ".route_service(",
            ".fallback_service(",
        ] {
            assert!(
                !text.contains(other),
                "server/src/{name} routes with `{other}`: teach this test to read it"
            );
        }
        let mut rest = text.as_str();
        while let Some(at) = rest.find(".route(") {
            rest = rest[at + ".route(".len()..].trim_start();
            let literal = rest.strip_prefix('"').unwrap_or_else(|| {
                panic!("server/src/{name}: a `.route(` whose path is not a string literal")
            });
            let end = literal.find('"').expect("a closed string literal");
            routes
                .entry(literal[..end].to_owned())
                .or_default()
                .insert(name.clone());
            rest = &literal[end..];
        }
    }
    routes
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP/1.1.

/// An answer: its status, headers and body (empty for `101` and `HEAD`).
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// The answer to a `HEAD`: the headers of a body that was not sent.
    headless: bool,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The router's own refusal: no route for the path (`404`) or the method (`405`), with the
    /// fallbacks' JSON bodies (every handler's `404` names what it did not find).
    fn is_the_routers(&self) -> bool {
        if self.headless {
            return matches!(self.status, 404 | 405)
                && self.header("content-type") == Some("application/json");
        }
        let body: Value = serde_json::from_slice(&self.body).unwrap_or(Value::Null);
        match self.status {
            404 => body == json!({"error": "not_found", "message": "no such endpoint"}),
            405 => body == json!({"error": "method_not_allowed", "message": "method not allowed"}),
            _ => false,
        }
    }
}

/// Reads more of the answer into `buf`; how many bytes came.
async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> usize {
    let mut chunk = [0u8; 16 * 1024];
    let n = stream.read(&mut chunk).await.expect("read the answer");
    buf.extend_from_slice(&chunk[..n]);
    n
}

/// One request on a connection of its own (closed after the answer unless it is an upgrade).
async fn send(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    send_as(HTTP_1_1, addr, method, target, headers, body).await
}

/// Like [`send`], with this HTTP version in the request line.
async fn send_as(
    version: &str,
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let request = exchange(version, addr, method, target, headers, body);
    tokio::time::timeout(PATIENCE, request)
        .await
        .unwrap_or_else(|_| panic!("{method} {target}: no answer in time"))
}

async fn exchange(
    version: &str,
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let mut request = format!("{method} {target} {version}\r\nHost: {addr}\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("connection"))
    {
        request.push_str("Connection: close\r\n");
    }
    if !matches!(method, "GET" | "HEAD") || !body.is_empty() {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the request");

    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = read_more(&mut stream, &mut buf).await;
        assert!(n > 0, "{method} {target}: closed without an answer");
    };
    let head = std::str::from_utf8(&buf[..head_end]).expect("an ASCII answer head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("a status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {status_line}"));
    let headers = lines
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (name, value) = line
                .split_once(':')
                .unwrap_or_else(|| panic!("not a header line: {line}"));
            (name.trim().to_owned(), value.trim().to_owned())
        })
        .collect();
    let mut answer = Answer {
        status,
        headers,
        body: Vec::new(),
        headless: method == "HEAD",
    };
    if status == 101 || method == "HEAD" {
        return answer;
    }
    assert!(
        answer.header("transfer-encoding").is_none(),
        "{method} {target}: a streamed answer; this test reads Content-Length answers"
    );
    let mut body = buf.split_off(head_end);
    match answer.header("content-length") {
        Some(length) => {
            let length: usize = length.parse().expect("a Content-Length");
            while body.len() < length {
                let n = read_more(&mut stream, &mut body).await;
                assert!(n > 0, "{method} {target}: the body was cut short");
            }
            body.truncate(length);
        }
        None => {
            stream.read_to_end(&mut body).await.expect("read the body");
        }
    }
    answer.body = body;
    answer
}

// ---------------------------------------------------------------------------------------------
// Checking answers against the document.

/// The answer's status is one the operation documents; its content type is one that response
/// documents, and its body fits that content's schema (or is empty where none is documented).
fn check_answer(doc: &Value, op: &Operation<'_>, answer: &Answer, what: &str) {
    let responses = op.op["responses"]
        .as_object()
        .expect("`responses` is an object");
    let Some(response) = responses.get(&answer.status.to_string()) else {
        panic!(
            "{what}: {} is not a documented response of {} (documented: {:?}); body: {}",
            answer.status,
            op.name(),
            responses.keys().collect::<Vec<_>>(),
            answer.text()
        );
    };
    let response = resolve(doc, response);
    let Some(content) = response.get("content").and_then(Value::as_object) else {
        assert!(
            answer.body.is_empty(),
            "{what}: {} documents no content, but the body is {}",
            answer.status,
            answer.text()
        );
        return;
    };
    let given = answer.header("content-type").unwrap_or_else(|| {
        panic!(
            "{what}: {} has no Content-Type; body: {}",
            answer.status,
            answer.text()
        )
    });
    let Some(media) = content
        .iter()
        .find(|(documented, _)| essence(documented) == essence(given))
        .map(|(_, media)| media)
    else {
        panic!(
            "{what}: {} answered `{given}`, documented: {:?}; body: {}",
            answer.status,
            content.keys().collect::<Vec<_>>(),
            answer.text()
        );
    };
    let Some(schema) = media.get("schema") else {
        return;
    };
    let value = if essence(given) == "application/json" {
        serde_json::from_slice(&answer.body)
            .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", answer.text()))
    } else {
        Value::String(
            String::from_utf8(answer.body.clone())
                .unwrap_or_else(|_| panic!("{what}: `{given}` that is not UTF-8")),
        )
    };
    let errors = validate(doc, schema, &value, "body");
    assert!(
        errors.is_empty(),
        "{what}: the {} body does not fit its schema:\n  {}\nbody: {}",
        answer.status,
        errors.join("\n  "),
        answer.text()
    );
}

/// The operation's documented example request: its path parameters and query parameters filled
/// with their examples.
fn example_target(doc: &Value, op: &Operation<'_>) -> String {
    let mut target = op.path.to_owned();
    let mut query = Vec::new();
    for parameter in parameters(doc, op) {
        let name = parameter["name"].as_str().expect("a parameter has a name");
        let place = parameter["in"].as_str();
        if !matches!(place, Some("path" | "query")) {
            // Header parameters (the upgrade's) are left out: a plain request is the example.
            continue;
        }
        let Some(example) = example_of(parameter) else {
            continue;
        };
        let example = match example {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        assert!(
            example
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~,".contains(&b)),
            "{}: the example of `{name}` needs no percent-encoding here",
            op.name()
        );
        match place {
            Some("path") => target = target.replace(&format!("{{{name}}}"), &example),
            Some("query") => query.push(format!("{name}={example}")),
            _ => {}
        }
    }
    if !query.is_empty() {
        target.push('?');
        target.push_str(&query.join("&"));
    }
    target
}

/// The operation's documented example body (JSON), if it takes one.
fn example_body(doc: &Value, op: &Operation<'_>) -> Option<String> {
    let body = resolve(doc, op.op.get("requestBody")?);
    let example = body.pointer("/content/application~1json/example");
    Some(
        example
            .unwrap_or_else(|| panic!("{}: document an example request body", op.name()))
            .to_string(),
    )
}

/// Requests to documented operations of one server, each checked against the document.
struct Probe<'a> {
    doc: &'a Value,
    addr: SocketAddr,
    service_key: String,
    /// Every status each operation answered.
    seen: BTreeMap<String, BTreeSet<u16>>,
}

impl Probe<'_> {
    /// Sends a request to the operation `method path` and checks the answer against it.
    async fn call(
        &mut self,
        method: &str,
        path: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        self.call_as(HTTP_1_1, method, path, target, headers, body)
            .await
    }

    /// Like [`Probe::call`], with this HTTP version in the request line.
    async fn call_as(
        &mut self,
        version: &str,
        method: &str,
        path: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let op = operation(self.doc, path, method);
        let what = format!("{method} {target} {version}");
        let answer = send_as(version, self.addr, method, target, headers, body).await;
        assert!(
            !answer.is_the_routers(),
            "{what}: the router answered {} for a documented operation",
            answer.status
        );
        check_answer(self.doc, &op, &answer, &what);
        self.seen
            .entry(op.name())
            .or_default()
            .insert(answer.status);
        answer
    }

    /// Like [`Probe::call`], and the status is `status`.
    async fn expect(
        &mut self,
        status: u16,
        method: &str,
        path: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let answer = self.call(method, path, target, headers, body).await;
        assert_eq!(
            answer.status,
            status,
            "{method} {target}: {}",
            answer.text()
        );
        answer
    }

    /// Every documented operation with its example request, the service key or a player token
    /// where its security names one; then, where it names the service key, without it (`401`)
    /// and with something else (`403`): an operation whose key is optional (the playground's
    /// graph) has an example that needs it.
    async fn every_example(&mut self, token: Option<&str>) {
        let doc = self.doc;
        let key = format!("Bearer {}", self.service_key);
        let player = token.map(|t| format!("Bearer {t}"));
        for op in operations(doc) {
            let method = op.method.to_uppercase();
            let target = example_target(doc, &op);
            let body = example_body(doc, &op);
            let mut headers: Vec<(&str, &str)> = Vec::new();
            if body.is_some() {
                headers.push(("Content-Type", "application/json"));
            }
            let schemes = security(doc, &op);
            let body = body.unwrap_or_default();
            if schemes.contains("serviceKey") {
                let mut with_key = headers.clone();
                with_key.push(("Authorization", key.as_str()));
                self.call(&method, op.path, &target, &with_key, &body).await;
                self.expect(401, &method, op.path, &target, &headers, &body)
                    .await;
                let mut wrong = headers.clone();
                wrong.push(("Authorization", "Bearer not-the-service-key"));
                self.expect(403, &method, op.path, &target, &wrong, &body)
                    .await;
                if let Some(player) = &player {
                    let mut as_player = headers.clone();
                    as_player.push(("Authorization", player));
                    self.expect(403, &method, op.path, &target, &as_player, &body)
                        .await;
                }
            } else {
                if let Some(player) = player
                    .as_deref()
                    .filter(|_| schemes.contains("playerToken"))
                {
                    headers.push(("Authorization", player));
                }
                self.call(&method, op.path, &target, &headers, &body).await;
            }
        }
    }

    /// Every method a path does not document gets the router's `405` (`HEAD` goes with `GET`).
    async fn undocumented_methods(&mut self) {
        let doc = self.doc;
        let paths = doc["paths"].as_object().expect("`paths` is an object");
        for (path, item) in paths {
            let target = operation_target(doc, path);
            for method in PROBED_METHODS {
                let lower = method.to_ascii_lowercase();
                let documented =
                    item.get(&lower).is_some() || (method == "HEAD" && item.get("get").is_some());
                if documented {
                    continue;
                }
                let answer = send(self.addr, method, &target, &[], "").await;
                assert!(
                    answer.status == 405 && answer.is_the_routers(),
                    "{method} {target}: an undocumented method answered {}: {}",
                    answer.status,
                    answer.text()
                );
            }
        }
    }
}

/// A JSON body one byte over the 2 MiB limit, all of it one string field.
fn over_the_body_limit(field: &str) -> String {
    let frame = format!(r#"{{"{field}":""}}"#);
    let body = format!(
        r#"{{"{field}":"{}"}}"#,
        "a".repeat((2 << 20) + 1 - frame.len())
    );
    assert_eq!(body.len(), (2 << 20) + 1);
    body
}

/// The example target of any operation of `path` (they share their path parameters).
fn operation_target(doc: &Value, path: &str) -> String {
    let op = operations(doc)
        .into_iter()
        .find(|o| o.path == path)
        .unwrap_or_else(|| panic!("{path} has no operation"));
    example_target(doc, &op)
}

/// The documented path whose template a request target's path matches, a literal one first
/// (as the router prefers).
fn documented_path<'a>(doc: &'a Value, target: &str) -> &'a str {
    let path = target.split('?').next().unwrap_or_default();
    let segments: Vec<&str> = path.split('/').collect();
    let paths = doc["paths"].as_object().expect("`paths` is an object");
    let matches = |template: &str, literal_only: bool| {
        let parts: Vec<&str> = template.split('/').collect();
        parts.len() == segments.len()
            && parts
                .iter()
                .zip(&segments)
                .all(|(part, segment)| part == segment || (!literal_only && part.starts_with('{')))
    };
    [true, false]
        .into_iter()
        .find_map(|literal_only| {
            paths
                .keys()
                .find(|template| matches(template, literal_only))
        })
        .unwrap_or_else(|| panic!("no documented path matches {target}"))
}

// ---------------------------------------------------------------------------------------------
// The tests.

#[test]
fn the_document_is_openapi_3_1_and_whole() {
    let doc = spec();
    let version = doc["openapi"].as_str().expect("an `openapi` version");
    assert!(version.starts_with("3.1."), "OpenAPI {version}, not 3.1");
    assert!(doc.pointer("/info/title").is_some_and(Value::is_string));
    assert!(doc.pointer("/info/version").is_some_and(Value::is_string));
    let ops = operations(&doc);
    assert!(!ops.is_empty(), "no operations");
    let mut problems = Vec::new();

    // Every path has an operation, every operation a response, every response a description.
    for (path, item) in doc["paths"].as_object().expect("`paths` is an object") {
        if !METHODS.iter().any(|m| item.get(*m).is_some()) {
            problems.push(format!("{path}: no operation"));
        }
    }
    let tags: BTreeSet<&str> = doc["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let schemes = doc
        .pointer("/components/securitySchemes")
        .and_then(Value::as_object)
        .expect("components/securitySchemes");
    let mut ids = BTreeSet::new();
    for op in &ops {
        let name = op.name();
        match op.op["operationId"].as_str() {
            Some(id) if ids.insert(id) => {}
            other => problems.push(format!("{name}: operationId {other:?} missing or repeated")),
        }
        for tag in op.op["tags"].as_array().into_iter().flatten() {
            if !tag.as_str().is_some_and(|t| tags.contains(t)) {
                problems.push(format!("{name}: tag {tag} is not in `tags`"));
            }
        }
        let responses = op.op["responses"].as_object();
        if responses.is_none_or(|r| r.is_empty()) {
            problems.push(format!("{name}: no responses"));
        }
        for (status, response) in responses.into_iter().flatten() {
            if !status.parse::<u16>().is_ok_and(|s| (100..600).contains(&s)) {
                problems.push(format!("{name}: response `{status}` is not a status code"));
            }
            if !resolve(&doc, response)["description"].is_string() {
                problems.push(format!("{name}: response {status} has no description"));
            }
        }
        for scheme in security(&doc, op) {
            if !schemes.contains_key(&scheme) {
                problems.push(format!("{name}: unknown security scheme `{scheme}`"));
            }
        }
        if let Some(when) = op.op.get("x-banter-only-when")
            && when.as_str().is_none_or(|w| w.trim().is_empty())
        {
            problems.push(format!("{name}: `x-banter-only-when` is not a sentence"));
        }
        // The path template's names are exactly its required path parameters, each with an
        // example for the live test.
        let in_path: BTreeSet<String> = parameters(&doc, op)
            .into_iter()
            .filter(|p| p["in"] == "path")
            .map(|p| {
                if p["required"] != true || example_of(p).is_none() {
                    problems.push(format!(
                        "{name}: path parameter {p} needs required and an example"
                    ));
                }
                p["name"].as_str().unwrap_or_default().to_owned()
            })
            .collect();
        if in_path != template_names(op.path) {
            problems.push(format!(
                "{name}: path parameters {in_path:?}, template {:?}",
                template_names(op.path)
            ));
        }
    }

    // Every reference resolves; every schema uses keywords the validator knows; every example
    // fits its schema.
    walk(&doc, "#", &mut |at, value| {
        if let Some(reference) = value.get("$ref").and_then(Value::as_str) {
            let pointer = reference.strip_prefix('#').unwrap_or(reference);
            if doc.pointer(pointer).is_none() {
                problems.push(format!("{at}: `{reference}` names nothing"));
            }
        }
    });
    let mut schemas: Vec<(String, &Value)> = doc
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, schema)| (format!("#/components/schemas/{name}"), schema))
        .collect();
    walk(&doc, "#", &mut |at, value| {
        if let Some(schema) = value.get("schema") {
            schemas.push((format!("{at}/schema"), schema));
            if let Some(example) = value.get("example") {
                for error in validate(&doc, schema, example, "example") {
                    problems.push(format!("{at}: {error}"));
                }
            }
        }
    });
    for (at, schema) in &schemas {
        known_keywords(schema, at, &mut problems);
        for example in schema
            .get("examples")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for error in validate(&doc, schema, example, "examples[]") {
                problems.push(format!("{at}: {error}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/openapi.json:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_document_names_exactly_the_routes_in_the_source() {
    let doc = spec();
    let routes = routes_in_source();
    for file in ["http.rs", "playground.rs"] {
        assert!(
            routes.values().any(|files| files.contains(file)),
            "no `.route(\"...\")` found in server/src/{file}: the scan is broken"
        );
    }
    let routed: BTreeSet<&str> = routes.keys().map(String::as_str).collect();
    let documented: BTreeSet<&str> = doc["paths"]
        .as_object()
        .expect("`paths` is an object")
        .keys()
        .map(String::as_str)
        .collect();
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(
        undocumented.is_empty() && unrouted.is_empty(),
        "routed but not in docs/openapi.json: {undocumented:?}; in docs/openapi.json but not \
         routed: {unrouted:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_operation_answers_a_documented_status() {
    let doc = spec();
    let server = TestServer::start_with(|c| {
        c.bench_echo = true;
        c.playground = true;
    })
    .await;
    let (token, player) = server.login_player("device-openapi-0001").await;
    // A connected player, so game events and the audit have someone to be about.
    let client = server.connect(&token).await;
    let mut probe = Probe {
        doc: &doc,
        addr: server.addr,
        service_key: server.config.service_key.clone(),
        seen: BTreeMap::new(),
    };
    probe.every_example(Some(&token)).await;
    probe.undocumented_methods().await;

    // The answers the examples do not reach. First the upgrades: accepted with a token in the
    // query or the header, refused without one or with a locale that is not a tag.
    let (other_token, _) = server.login_player("device-openapi-0002").await;
    let other = format!("Bearer {other_token}");
    let mut upgrade: Vec<(&str, &str)> = UPGRADE.to_vec();
    for (path, query) in [("/v1/ws", "?locale=ja"), ("/bench/echo", "")] {
        probe.expect(401, "GET", path, path, &upgrade, "").await;
        let target = format!("{path}?token={other_token}");
        probe.expect(101, "GET", path, &target, &upgrade, "").await;
        upgrade.push(("Authorization", other.as_str()));
        let target = format!("{path}{query}");
        probe.expect(101, "GET", path, &target, &upgrade, "").await;
        upgrade.pop();
    }
    upgrade.push(("Authorization", other.as_str()));
    let target = "/v1/ws?locale=%21%21";
    let refused = probe
        .expect(400, "GET", "/v1/ws", target, &upgrade, "")
        .await;
    assert!(refused.text().contains("bad_request"), "{}", refused.text());
    // Locale tags are BCP 47 (no underscore, one region); a parameter given twice is unreadable:
    // each a JSON `400` and no session.
    for target in [
        "/v1/ws?locale=pt_BR",
        "/v1/ws?locale=en-US-GB",
        "/v1/ws?locale=ja&locale=ar",
        "/v1/ws?locale=ja&token=a&token=b",
    ] {
        let refused = probe
            .expect(400, "GET", "/v1/ws", target, &upgrade, "")
            .await;
        let body: Value = serde_json::from_slice(&refused.body).expect("a JSON body");
        assert_eq!(body["error"], "bad_request", "{target}: {body}");
    }
    upgrade.pop();
    // The `Bearer` scheme in any case (RFC 7235).
    for scheme in ["bearer", "BEARER", "BeArEr"] {
        let header = format!("{scheme} {other_token}");
        let mut headers = upgrade.clone();
        headers.push(("Authorization", header.as_str()));
        probe
            .expect(101, "GET", "/v1/ws", "/v1/ws", &headers, "")
            .await;
    }
    upgrade.push(("Authorization", other.as_str()));
    // Not an upgrade: a JSON `400` about the handshake, before the query string is read.
    let refused = probe
        .expect(400, "GET", "/v1/ws", "/v1/ws?locale=pt_BR", &[], "")
        .await;
    assert!(
        refused.text().contains("Connection header"),
        "{}",
        refused.text()
    );
    // HTTP/1.0 cannot upgrade.
    for path in ["/v1/ws", "/bench/echo"] {
        let answer = probe
            .call_as("HTTP/1.0", "GET", path, path, &upgrade, "")
            .await;
        assert_eq!(answer.status, 426, "{}", answer.text());
        assert!(
            answer.text().contains(r#""error":"upgrade_required""#),
            "{}",
            answer.text()
        );
    }

    // Then one request per case, `STATUS METHOD TARGET` and a JSON body, with the service key
    // where the operation asks for it.
    let event = |id: &str, kind: &str, species: Option<&str>| {
        let mut event = json!({"event_id": id, "player": player, "kind": kind,
            "island": "brinehollow"});
        if let Some(species) = species {
            event["species"] = json!(species);
        }
        event.to_string()
    };
    let snapper = Some("Copper Snapper");
    let cases: Vec<(String, String)> = vec![
        // Device login refuses a short id and an unknown field.
        (
            "400 POST /v1/auth/device".into(),
            r#"{"device_id":"short"}"#.into(),
        ),
        (
            "400 POST /v1/auth/device".into(),
            r#"{"device_id":"device-1234","x":1}"#.into(),
        ),
        // Game events for the connected player: applied, then a duplicate; bad bodies.
        (
            "200 POST /internal/events".into(),
            event("catch-1", "fish_caught", snapper),
        ),
        (
            "409 POST /internal/events".into(),
            event("catch-1", "fish_caught", snapper),
        ),
        (
            "200 POST /internal/events".into(),
            event("intro-1", "tutorial_started", None),
        ),
        (
            "400 POST /internal/events".into(),
            event("find-1", "item_found", snapper),
        ),
        ("400 POST /internal/events".into(), "{}".into()),
        ("400 POST /internal/events".into(), "not json".into()),
        // A body over the 2 MiB limit is `413`, whatever it holds.
        (
            "413 POST /internal/events".into(),
            over_the_body_limit("event_id"),
        ),
        (
            "413 POST /v1/auth/device".into(),
            over_the_body_limit("device_id"),
        ),
        // The audit of that player; without a player; a bad limit; an unknown parameter.
        (
            format!("200 GET /admin/audit?player={player}&limit=5"),
            String::new(),
        ),
        ("400 GET /admin/audit".into(), String::new()),
        (
            "400 GET /admin/audit?player=p&limit=-1".into(),
            String::new(),
        ),
        (
            "400 GET /admin/audit?player=p&colour=blue".into(),
            String::new(),
        ),
        // Analytics: the index, a report, an unknown conversation, bad queries.
        ("200 GET /admin/analytics".into(), String::new()),
        (
            "200 GET /admin/analytics?conversation=Pim".into(),
            String::new(),
        ),
        (
            "404 GET /admin/analytics?conversation=NoSuchOne".into(),
            String::new(),
        ),
        ("400 GET /admin/analytics?version=v1".into(), String::new()),
        (
            "400 GET /admin/analytics?locale=%21%21".into(),
            String::new(),
        ),
        ("400 GET /admin/analytics?colour=blue".into(), String::new()),
        // The playground's refusals.
        (
            "404 GET /playground/api/graph/Pim.png".into(),
            String::new(),
        ),
        (
            "404 GET /playground/api/graph/NoSuchOne.svg".into(),
            String::new(),
        ),
        (
            "400 GET /playground/api/graph/Pim.svg?current=a&current=b".into(),
            String::new(),
        ),
        (
            "400 GET /playground/api/graph/Pim.svg?analytics=yes".into(),
            String::new(),
        ),
        (
            "400 GET /playground/api/graph/Pim.svg?analytics=true&locale=%21%21".into(),
            String::new(),
        ),
        ("404 GET /playground/nope.txt".into(), String::new()),
        ("400 GET /playground/%FF".into(), String::new()),
        ("404 GET /playground/client/nope.js".into(), String::new()),
        ("400 GET /playground/client/%FF".into(), String::new()),
    ];
    let key = format!("Bearer {}", server.config.service_key);
    for (case, body) in &cases {
        let mut words = case.split(' ');
        let (Some(status), Some(method), Some(target)) = (words.next(), words.next(), words.next())
        else {
            panic!("not `STATUS METHOD TARGET`: {case}");
        };
        let status: u16 = status.parse().expect("a status");
        let path = documented_path(&doc, target);
        let mut headers = Vec::new();
        if security(&doc, &operation(&doc, path, method)).contains("serviceKey") {
            headers.push(("Authorization", key.as_str()));
        }
        if !body.is_empty() {
            headers.push(("Content-Type", "application/json"));
        }
        let answer = probe
            .expect(status, method, path, target, &headers, body)
            .await;
        if target.ends_with("?conversation=Pim") {
            let report = answer.text();
            assert!(report.contains(r#""conversation":"Pim""#), "{report}");
        }
    }

    // Game-server channels: a credential issued, a channel opened, its batches, the channel
    // WebSocket, the end; the player's own WebSocket refused while a channel carries it.
    let json_key = [
        ("Authorization", key.as_str()),
        ("Content-Type", "application/json"),
    ];
    probe
        .expect(
            400,
            "POST",
            "/admin/game-servers",
            "/admin/game-servers",
            &json_key,
            r#"{"name":"","players":["rbx-"]}"#,
        )
        .await;
    probe
        .expect(
            413,
            "POST",
            "/admin/game-servers",
            "/admin/game-servers",
            &json_key,
            &over_the_body_limit("name"),
        )
        .await;
    let issued = probe
        .expect(
            201,
            "POST",
            "/admin/game-servers",
            "/admin/game-servers",
            &json_key,
            r#"{"name":"openapi","players":["rbx-"]}"#,
        )
        .await;
    let issued: Value = serde_json::from_slice(&issued.body).expect("JSON");
    let gs = issued["id"].as_str().expect("an id").to_owned();
    let credential = format!(
        "Bearer {}",
        issued["credential"].as_str().expect("a credential")
    );
    let with_credential = [
        ("Authorization", credential.as_str()),
        ("Content-Type", "application/json"),
    ];
    let opened = probe
        .expect(
            201,
            "POST",
            "/v1/channels",
            "/v1/channels",
            &with_credential[..1],
            "",
        )
        .await;
    let opened: Value = serde_json::from_slice(&opened.body).expect("JSON");
    let channel = opened["channel"].as_str().expect("a channel").to_owned();
    probe
        .expect(
            400,
            "POST",
            "/v1/channels",
            "/v1/channels",
            &with_credential,
            r#"{"x":1}"#,
        )
        .await;
    let batch_path = "/v1/channels/{channel}/batch";
    let batch = format!("/v1/channels/{channel}/batch");
    let first = r#"{"seq":1,"positions":[{"player":"rbx-1","position":[-640,2,910]}],"items":[{"player":"rbx-1","join":{}},{"player":"rbx-1","message":{"type":"talk","id":1,"npc":"Pim"}},{"player":"rbx-2","leave":true}]}"#;
    for (status, body) in [
        (200, first.to_owned()),
        (200, first.to_owned()),
        (409, r#"{"seq":0}"#.to_owned()),
        (409, r#"{"seq":3}"#.to_owned()),
        (400, r#"{"seq":2,"items":[{"player":"rbx-1"}]}"#.to_owned()),
        (400, r#"{"seq":2,"ack":99}"#.to_owned()),
        (413, over_the_body_limit("seq")),
        (200, r#"{"seq":2,"ack":3,"wait_ms":10}"#.to_owned()),
    ] {
        probe
            .expect(status, "POST", batch_path, &batch, &with_credential, &body)
            .await;
    }
    let player_token = format!("Bearer {}", server.player_token("rbx-1"));
    for (status, auth) in [
        (401, None),
        (403, Some(key.as_str())),
        (403, Some(player_token.as_str())),
    ] {
        let mut headers = vec![("Content-Type", "application/json")];
        headers.extend(auth.map(|a| ("Authorization", a)));
        probe
            .expect(status, "POST", batch_path, &batch, &headers, r#"{"seq":3}"#)
            .await;
    }
    let elsewhere = "/v1/channels/ch_AAAAAAAAAAAAAAAAAAAAAA/batch";
    probe
        .expect(
            404,
            "POST",
            batch_path,
            elsewhere,
            &with_credential,
            r#"{"seq":1}"#,
        )
        .await;
    // The player's own WebSocket while the channel carries the player.
    let mut carried: Vec<(&str, &str)> = UPGRADE.to_vec();
    carried.push(("Authorization", player_token.as_str()));
    let refused = probe
        .expect(409, "GET", "/v1/ws", "/v1/ws", &carried, "")
        .await;
    assert!(
        refused.text().contains("carried_elsewhere"),
        "{}",
        refused.text()
    );
    // The channel WebSocket.
    let socket = "/v1/channels/ws";
    let mut upgrade_as: Vec<(&str, &str)> = UPGRADE.to_vec();
    probe
        .expect(401, "GET", socket, socket, &upgrade_as, "")
        .await;
    upgrade_as.push(("Authorization", key.as_str()));
    probe
        .expect(403, "GET", socket, socket, &upgrade_as, "")
        .await;
    upgrade_as.pop();
    upgrade_as.push(("Authorization", credential.as_str()));
    probe
        .expect(101, "GET", socket, socket, &upgrade_as, "")
        .await;
    probe
        .expect(400, "GET", socket, socket, &with_credential[..1], "")
        .await;
    // The end: the channel, then the credential.
    let channel_path = "/v1/channels/{channel}";
    let target = format!("/v1/channels/{channel}");
    probe
        .expect(
            204,
            "DELETE",
            channel_path,
            &target,
            &with_credential[..1],
            "",
        )
        .await;
    probe
        .expect(
            404,
            "DELETE",
            channel_path,
            &target,
            &with_credential[..1],
            "",
        )
        .await;
    let revoke = format!("/admin/game-servers/{gs}");
    for _ in 0..2 {
        probe
            .expect(
                200,
                "DELETE",
                "/admin/game-servers/{id}",
                &revoke,
                &json_key[..1],
                "",
            )
            .await;
    }
    probe
        .expect(
            401,
            "POST",
            "/v1/channels",
            "/v1/channels",
            &with_credential[..1],
            "",
        )
        .await;

    // Every operation answered a success at least once.
    for op in operations(&doc) {
        let seen = probe.seen.get(&op.name()).cloned().unwrap_or_default();
        assert!(
            seen.iter().any(|s| (100..300).contains(s)),
            "{}: never answered a success (seen {seen:?})",
            op.name()
        );
    }
    client.close().await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_marked_routes_are_gone_in_production() {
    let doc = spec();
    let server = TestServer::start_with(|c| {
        c.production = true;
        c.auth_secret = "an-openapi-test-production-secret-of-32-bytes+".to_owned();
        c.service_key = "an-openapi-test-production-service-key".to_owned();
        c.bench_echo = false;
        c.playground = false;
    })
    .await;
    let key = format!("Bearer {}", server.config.service_key);
    for op in operations(&doc) {
        let method = op.method.to_uppercase();
        let target = example_target(&doc, &op);
        let body = example_body(&doc, &op);
        let mut headers: Vec<(&str, &str)> = Vec::new();
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        if security(&doc, &op).contains("serviceKey") {
            headers.push(("Authorization", key.as_str()));
        }
        let answer = send(
            server.addr,
            &method,
            &target,
            &headers,
            &body.unwrap_or_default(),
        )
        .await;
        let what = format!("{method} {target} in production");
        if op.op.get("x-banter-only-when").is_some() {
            assert!(
                answer.status == 404 && answer.is_the_routers(),
                "{what}: marked `x-banter-only-when`, yet answered {}: {}",
                answer.status,
                answer.text()
            );
        } else {
            assert!(
                !answer.is_the_routers(),
                "{what}: the router answered {}",
                answer.status
            );
            check_answer(&doc, &op, &answer, &what);
        }
    }
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_json_is_the_file_byte_for_byte() {
    let server = TestServer::start().await;
    let answer = send(server.addr, "GET", "/openapi.json", &[], "").await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert!(
        answer.body == spec_bytes(),
        "GET /openapi.json is not docs/openapi.json byte for byte (rebuild the server?)"
    );
    server.stop().await.expect("clean shutdown");
}
