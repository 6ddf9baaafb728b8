//! Disk faults: `korral apiserver` on a durable data directory, run under a file-size limit
//! (`ulimit -f`, with SIGXFSZ ignored so the write fails with EFBIG as on a full disk). The write
//! that does not fit is answered 500, nothing of it is visible, reads are still served, and a
//! restart without the limit recovers every acknowledged write and accepts writes again.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

const KORRAL: &str = env!("CARGO_BIN_EXE_korral");

/// A `korral apiserver` child on plain HTTP; dropped, it is killed.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server on `dir`; with `blocks`, under `ulimit -f <blocks>` (512-byte blocks in
/// POSIX `sh`) and with SIGXFSZ ignored (an ignored signal stays ignored across `exec`).
fn start(dir: &Path, blocks: Option<u64>) -> anyhow::Result<Server> {
    let kubeconfig = dir.with_extension("kubeconfig");
    let limit = blocks.map_or("unlimited".to_string(), |b| b.to_string());
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {limit}; exec \"$0\" \"$@\""
        ))
        .arg(KORRAL)
        .args(["apiserver", "--insecure-http", "--port", "0", "--data-dir"])
        .arg(dir)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("spawning korral apiserver")?;
    let stdout = child.stdout.take().context("stdout")?;
    let (tx, rx) = mpsc::channel();
    // Keep draining stdout for the server's whole life (it prints again when stopping).
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut server = Server { child, port: 0 };
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .context("no `listening on` line within 60s")?;
        if let Some(url) = line.strip_prefix("korral apiserver listening on ") {
            server.port = url
                .trim()
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .context("port")?;
            return Ok(server);
        }
    }
}

/// One request; the status code and the JSON body.
fn call(
    server: &Server,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> anyhow::Result<(u16, Value)> {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let bytes = body
        .map(serde_json::to_vec)
        .transpose()?
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        bytes.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(&bytes)?;
    let mut out = Vec::new();
    stream.read_to_end(&mut out)?;
    let text = String::from_utf8_lossy(&out);
    let code = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("status line")?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_string()
    };
    Ok((code, serde_json::from_str(&body).unwrap_or(Value::Null)))
}

/// The payload of a chunked HTTP/1.1 body (large lists are streamed in chunks).
fn dechunk(mut body: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").context("chunk size line")?;
        let size = usize::from_str_radix(size.trim(), 16).context("chunk size")?;
        if size == 0 {
            return Ok(out);
        }
        out.push_str(rest.get(..size).context("chunk shorter than its size")?);
        body = rest.get(size + 2..).context("chunk terminator")?;
    }
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"payload": "x".repeat(3000)}})
}

fn names(server: &Server) -> anyhow::Result<Vec<String>> {
    let (code, list) = call(server, "GET", CONFIGMAPS, None)?;
    ensure!(code == 200, "list answered {code}: {list}");
    let mut names: Vec<String> = list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    Ok(names)
}

#[test]
fn a_write_that_does_not_fit_is_refused_cleanly_and_recovered_after_restart() -> anyhow::Result<()>
{
    let root = tempfile::tempdir()?;
    let dir = root.path().join("data");
    // 256 KiB: room for what the server writes on start (built-in objects, flow control
    // configuration, local APIServices: about 66 KiB) and a few dozen of the 3 KB ConfigMaps
    // below, far fewer than the 200 the loop tries.
    let server = start(&dir, Some(512))?;
    let mut acknowledged = Vec::new();
    let mut refused = None;
    for i in 0..200 {
        let name = format!("cm-{i:03}");
        let (code, status) = call(&server, "POST", CONFIGMAPS, Some(&configmap(&name)))?;
        match code {
            201 => acknowledged.push(name),
            500 => {
                ensure!(status["kind"] == "Status", "not a Status: {status}");
                let message = status["message"].as_str().unwrap_or_default();
                ensure!(
                    message.contains("writing the storage log failed"),
                    "unexpected message: {message}"
                );
                refused = Some(name);
                break;
            }
            other => bail!("create {name}: {other} {status}"),
        }
    }
    let refused = refused.context("the file-size limit was never reached")?;
    ensure!(!acknowledged.is_empty(), "no write fitted at all");
    // Nothing of the refused write is visible; reads are still served.
    let (code, _) = call(&server, "GET", &format!("{CONFIGMAPS}/{refused}"), None)?;
    ensure!(code == 404, "the refused object is visible ({code})");
    let listed = names(&server)?;
    ensure!(
        listed == acknowledged,
        "the list changed: {listed:?} vs {acknowledged:?}"
    );
    let (code, _) = call(
        &server,
        "GET",
        &format!("{CONFIGMAPS}/{}", acknowledged[0]),
        None,
    )?;
    ensure!(code == 200, "reads are not served ({code})");
    // Later writes are refused (the store went read-only) with a Status, not accepted halfway.
    let (code, status) = call(&server, "POST", CONFIGMAPS, Some(&configmap("after")))?;
    ensure!(code >= 500 && status["kind"] == "Status", "{code} {status}");
    drop(server);

    // Space returns: a restart recovers exactly the acknowledged writes and writes again.
    let server = start(&dir, None)?;
    ensure!(
        names(&server)? == acknowledged,
        "recovery lost or invented objects"
    );
    let (code, status) = call(&server, "POST", CONFIGMAPS, Some(&configmap(&refused)))?;
    ensure!(code == 201, "writing after recovery: {code} {status}");
    Ok(())
}
