//! Kubeconfig files pointing clients (kubectl, kube-rs) at the server.
//!
//! [`render`] produces a single-cluster, single-user kubeconfig; [`write`] stores it atomically
//! with owner-only permissions, since it carries a bearer token.

use std::io::Write as _;
use std::path::Path;

use base64::Engine as _;

/// A JSON-quoted string, which YAML reads as a double-quoted scalar (safe for any content).
fn quoted(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// Renders a kubeconfig with one cluster, one user and one context, all named `context_name`,
/// and that context current.
///
/// The cluster points at `server_url`; with `ca_pem` (TLS) the CA is embedded as
/// `certificate-authority-data` (base64 of the PEM); the user authenticates with `token`.
pub fn render(server_url: &str, ca_pem: Option<&str>, token: &str, context_name: &str) -> String {
    let name = quoted(context_name);
    let mut lines = vec![
        "apiVersion: v1".to_string(),
        "kind: Config".to_string(),
        "clusters:".to_string(),
        format!("- name: {name}"),
        "  cluster:".to_string(),
        format!("    server: {}", quoted(server_url)),
    ];
    if let Some(ca) = ca_pem {
        let data = base64::engine::general_purpose::STANDARD.encode(ca.as_bytes());
        lines.push(format!("    certificate-authority-data: {data}"));
    }
    lines.extend([
        "contexts:".to_string(),
        format!("- name: {name}"),
        "  context:".to_string(),
        format!("    cluster: {name}"),
        format!("    user: {name}"),
        format!("current-context: {name}"),
        "preferences: {}".to_string(),
        "users:".to_string(),
        format!("- name: {name}"),
        "  user:".to_string(),
        format!("    token: {}", quoted(token)),
    ]);
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Creates `dir` (and missing parents) with owner-only permissions (0700 on Unix), for
/// directories holding keys, tokens and objects. With `tighten`, an existing `dir` is set to
/// 0700 as well (the server's own data directory); otherwise an existing one is left as is.
pub fn create_private_dir(dir: &Path, tighten: bool) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)?;
    #[cfg(unix)]
    if tighten {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    #[cfg(not(unix))]
    let _ = tighten;
    Ok(())
}

/// Writes `contents` to `path` atomically: missing parent directories are created (mode 0700
/// on Unix), the data goes to a temporary file (mode 0600 on Unix) in the same directory which
/// then replaces `path`.
pub fn write(path: &Path, contents: &str) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    create_private_dir(dir, false)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} has no file name", path.display()),
            )
        })?;
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let mut file = options.open(&tmp)?;
        file.write_all(contents.as_bytes())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    } else {
        tracing::debug!(path = %path.display(), "wrote kubeconfig");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn parse(yaml: &str) -> anyhow::Result<Value> {
        Ok(serde_yaml_ng::from_str(yaml)?)
    }

    #[test]
    fn tls_kubeconfig_parses_to_the_expected_structure() -> anyhow::Result<()> {
        let ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let yaml = render("https://127.0.0.1:6443", Some(ca), "s3cr3t", "korral");
        let doc = parse(&yaml)?;
        let data = base64::engine::general_purpose::STANDARD.encode(ca);
        assert_eq!(
            doc,
            json!({
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "korral", "cluster": {
                    "server": "https://127.0.0.1:6443",
                    "certificate-authority-data": data,
                }}],
                "contexts": [{"name": "korral", "context": {"cluster": "korral", "user": "korral"}}],
                "current-context": "korral",
                "preferences": {},
                "users": [{"name": "korral", "user": {"token": "s3cr3t"}}],
            })
        );
        Ok(())
    }

    #[test]
    fn plain_http_has_no_ca_and_odd_strings_survive() -> anyhow::Result<()> {
        let token = "a: b # \"c\" 'd'\n{e}";
        let yaml = render("http://localhost:8080", None, token, "yes");
        let doc = parse(&yaml)?;
        assert_eq!(
            doc["clusters"][0]["cluster"],
            json!({"server": "http://localhost:8080"})
        );
        assert_eq!(doc["users"][0]["user"]["token"], token);
        assert_eq!(doc["current-context"], "yes");
        assert_eq!(doc["contexts"][0]["context"]["user"], "yes");
        Ok(())
    }

    #[test]
    fn write_is_atomic_private_and_creates_directories() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("a/b/kubeconfig");
        write(&path, "first")?;
        write(&path, "second")?;
        assert_eq!(std::fs::read_to_string(&path)?, "second");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("a/b"))?
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path)?.permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        Ok(())
    }
}
