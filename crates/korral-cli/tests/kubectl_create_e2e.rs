//! End-to-end with the real `kubectl` (the default one and the old 1.27 one) on the imperative
//! `create` commands of the core group and on `get all`: `create service
//! clusterip|nodeport|externalname` (allocated cluster IPs and node ports, the `get svc`
//! columns, taken and out-of-range node ports refused), `create quota` (status kept up to date,
//! `get`/`describe quota`, creates beyond it refused), `create secret tls|docker-registry`
//! (stored type and keys, `get secret` columns, a TLS secret without its key refused) and
//! `get all` / `get all -A` over a simulated Deployment and its Service.
//!
//! Each kubectl gets one simulating server, shared by its sections (each in its own
//! namespace); every failing step is collected and reported together.

mod support;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use support::{CmdOutput, Failures, Options, Run, Server, Storage, for_each_kubectl};

/// How long the quota controller and the workload simulation may take to catch up.
const SETTLE: Duration = Duration::from_secs(30);

/// The Service range of the server (kubeadm's default).
const SERVICE_NET: (Ipv4Addr, u32) = (Ipv4Addr::new(10, 96, 0, 0), 12);

/// `-n NS` followed by `args`.
fn n<'a>(ns: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    all
}

/// Runs `kubectl args -o json` and parses the output (a failure is recorded).
fn json_of(run: &mut Run<'_>, args: &[&str]) -> Option<Value> {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = run.k(&all);
    let parsed = out
        .success()
        .then(|| serde_json::from_str::<Value>(&out.stdout).ok())
        .flatten();
    run.expect(
        parsed.is_some(),
        &format!("`kubectl {}` prints an object", all.join(" ")),
        &out,
    );
    parsed
}

/// Polls (at most [`SETTLE`]) until `kubectl args -o jsonpath=path` prints `want`.
fn wait_for(run: &mut Run<'_>, args: &[&str], path: &str, want: &str) -> bool {
    run.wait_for(args, path, want, SETTLE)
}

/// One table of `kubectl get` output: its header words and its rows' words.
#[derive(Debug, Default)]
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// The row whose cell in column `col` is `value`.
    fn row(&self, col: usize, value: &str) -> Option<&Vec<String>> {
        self.rows
            .iter()
            .find(|r| r.get(col).map(String::as_str) == Some(value))
    }

    /// The rows whose cell in column `col` starts with `prefix`.
    fn rows_starting(&self, col: usize, prefix: &str) -> Vec<&Vec<String>> {
        self.rows
            .iter()
            .filter(|r| r.get(col).is_some_and(|c| c.starts_with(prefix)))
            .collect()
    }
}

/// The tables of `kubectl get` output (a multi-kind `get` separates them by blank lines).
fn tables(out: &CmdOutput) -> Vec<Table> {
    let words = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let mut all: Vec<Table> = Vec::new();
    let mut current: Option<Table> = None;
    for line in out.stdout.lines() {
        if line.trim().is_empty() {
            all.extend(current.take());
        } else if let Some(t) = current.as_mut() {
            t.rows.push(words(line));
        } else {
            current = Some(Table {
                header: words(line),
                rows: Vec::new(),
            });
        }
    }
    all.extend(current);
    all
}

/// `words` as owned strings.
fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|s| s.to_string()).collect()
}

/// Whether `row` begins with the cells `want`.
fn starts(row: &[String], want: &[&str]) -> bool {
    row.len() >= want.len() && row.iter().zip(want).all(|(got, want)| got == want)
}

/// Whether `ip` is an allocatable address of the Service range other than the `kubernetes`
/// Service's.
fn dynamic_service_ip(ip: &str) -> bool {
    let Ok(ip) = ip.parse::<Ipv4Addr>() else {
        return false;
    };
    let (net, len) = SERVICE_NET;
    let mask = u32::MAX << (32 - len);
    let offset = u32::from(ip) - (u32::from(ip) & mask);
    u32::from(ip) & mask == u32::from(net) && offset > 1 && offset < !mask
}

fn services(run: &mut Run<'_>, ns: &str) {
    run.ok_contains(
        &["create", "namespace", ns],
        &[&format!("namespace/{ns} created")],
    );
    let create = [
        (
            &["create", "service", "nodeport", "web", "--tcp=80:8080"][..],
            "service/web created",
        ),
        (
            &[
                "create",
                "service",
                "nodeport",
                "fixed",
                "--tcp=80:8080",
                "--node-port=30080",
            ][..],
            "service/fixed created",
        ),
        (
            &[
                "create",
                "service",
                "externalname",
                "ext",
                "--external-name",
                "db.example.com",
            ][..],
            "service/ext created",
        ),
        (
            &[
                "create",
                "service",
                "clusterip",
                "headless",
                "--clusterip=None",
            ][..],
            "service/headless created",
        ),
        (
            &["create", "service", "clusterip", "plain", "--tcp=443:8443"][..],
            "service/plain created",
        ),
    ];
    for (args, printed) in create {
        run.ok_contains(&n(ns, args), &[printed]);
    }

    // The stored objects: allocated addresses and node ports, the requested one kept.
    let mut web_ip = String::new();
    let mut web_port = 0;
    let mut plain_ip = String::new();
    if let Some(web) = json_of(run, &n(ns, &["get", "svc", "web"])) {
        let spec = &web["spec"];
        web_ip = spec["clusterIP"].as_str().unwrap_or("").to_string();
        web_port = spec["ports"][0]["nodePort"].as_u64().unwrap_or(0);
        let tag = run.tag.clone();
        run.failures.check(
            spec["type"] == "NodePort"
                && dynamic_service_ip(&web_ip)
                && spec["clusterIPs"] == serde_json::json!([web_ip])
                && (30000..=32767).contains(&web_port)
                && spec["ports"][0]["port"] == 80
                && spec["ports"][0]["targetPort"] == 8080
                && spec["ports"][0]["protocol"] == "TCP"
                && spec["selector"] == serde_json::json!({"app": "web"}),
            || {
                format!(
                    "[{tag}] service web: a NodePort with a cluster IP in 10.96.0.0/12 and a node \
                     port in 30000-32767, port 80 -> 8080/TCP, selector app=web; got {spec}"
                )
            },
        );
    }
    if let Some(fixed) = json_of(run, &n(ns, &["get", "svc", "fixed"])) {
        let spec = &fixed["spec"];
        let tag = run.tag.clone();
        run.failures.check(
            spec["ports"][0]["nodePort"] == 30080
                && dynamic_service_ip(spec["clusterIP"].as_str().unwrap_or(""))
                && spec["clusterIP"].as_str() != Some(web_ip.as_str()),
            || {
                format!(
                    "[{tag}] service fixed: node port 30080 kept, its own cluster IP; got {spec}"
                )
            },
        );
    }
    if let Some(ext) = json_of(run, &n(ns, &["get", "svc", "ext"])) {
        let spec = &ext["spec"];
        let tag = run.tag.clone();
        run.failures.check(
            spec["type"] == "ExternalName"
                && spec["externalName"] == "db.example.com"
                && spec.get("clusterIP").is_none()
                && spec.get("clusterIPs").is_none(),
            || {
                format!(
                    "[{tag}] service ext: ExternalName db.example.com, no cluster IP; got {spec}"
                )
            },
        );
    }
    if let Some(headless) = json_of(run, &n(ns, &["get", "svc", "headless"])) {
        let spec = &headless["spec"];
        let tag = run.tag.clone();
        run.failures.check(
            spec["type"] == "ClusterIP"
                && spec["clusterIP"] == "None"
                && spec["clusterIPs"] == serde_json::json!(["None"]),
            || format!("[{tag}] service headless: clusterIP None; got {spec}"),
        );
    }
    if let Some(plain) = json_of(run, &n(ns, &["get", "svc", "plain"])) {
        plain_ip = plain["spec"]["clusterIP"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let tag = run.tag.clone();
        run.failures
            .check(dynamic_service_ip(&plain_ip) && plain_ip != web_ip, || {
                format!("[{tag}] service plain: a free cluster IP; got {plain}")
            });
    }

    // `kubectl get svc`: upstream's columns and cells.
    let out = run.ok_contains(&n(ns, &["get", "svc"]), &["web", "fixed", "ext"]);
    let got = tables(&out);
    let table = got.first();
    let want_header = strings(&[
        "NAME",
        "TYPE",
        "CLUSTER-IP",
        "EXTERNAL-IP",
        "PORT(S)",
        "AGE",
    ]);
    let web_ports = format!("80:{web_port}/TCP");
    let want_rows: [(&str, [&str; 4]); 5] = [
        (
            "web",
            ["NodePort", web_ip.as_str(), "<none>", web_ports.as_str()],
        ),
        ("fixed", ["NodePort", "", "<none>", "80:30080/TCP"]),
        (
            "ext",
            ["ExternalName", "<none>", "db.example.com", "<none>"],
        ),
        ("headless", ["ClusterIP", "None", "<none>", "<none>"]),
        (
            "plain",
            ["ClusterIP", plain_ip.as_str(), "<none>", "443/TCP"],
        ),
    ];
    let mut ok = got.len() == 1 && table.is_some_and(|t| t.header == want_header);
    for (name, cells) in want_rows {
        let row = table.and_then(|t| t.row(0, name));
        ok &= row.is_some_and(|r| {
            r.len() == 6
                && r[1..5]
                    .iter()
                    .zip(cells)
                    .all(|(got, want)| want.is_empty() || got == want)
        });
    }
    run.expect(
        ok,
        &format!(
            "`kubectl get svc`: header {want_header:?}, rows (NAME TYPE CLUSTER-IP EXTERNAL-IP \
             PORT(S)) {want_rows:?}"
        ),
        &out,
    );

    // Refusals: a node port already taken (requested or allocated), one outside the range.
    run.fails_with(
        &n(
            ns,
            &[
                "create",
                "service",
                "nodeport",
                "taken",
                "--tcp=80:8080",
                "--node-port=30080",
            ],
        ),
        &[
            "Service \"taken\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated",
        ],
    );
    if web_port != 0 {
        let flag = format!("--node-port={web_port}");
        let message = format!(
            "Service \"again\" is invalid: spec.ports[0].nodePort: Invalid value: {web_port}: provided port is already allocated"
        );
        run.fails_with(
            &n(
                ns,
                &[
                    "create",
                    "service",
                    "nodeport",
                    "again",
                    "--tcp=80:8080",
                    &flag,
                ],
            ),
            &[&message],
        );
    }
    run.fails_with(
        &n(
            ns,
            &[
                "create",
                "service",
                "nodeport",
                "low",
                "--tcp=80:8080",
                "--node-port=20000",
            ],
        ),
        &[
            "Service \"low\" is invalid: spec.ports[0].nodePort: Invalid value: 20000: provided port is not in the valid range. The range of valid ports is 30000-32767",
        ],
    );
    let out = run.k(&n(ns, &["get", "svc", "taken", "again", "low"]));
    run.expect(
        !out.success() && out.stdout.trim().is_empty(),
        "refused services are not stored",
        &out,
    );
}

/// A pod asking for `cpu`.
fn pod(name: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
  - name: app
    image: nginx:1.25
    resources: {{requests: {{cpu: {cpu}}}}}
"
    )
}

fn quota(run: &mut Run<'_>, ns: &str, dir: &Path) -> anyhow::Result<()> {
    run.ok_contains(
        &["create", "namespace", ns],
        &[&format!("namespace/{ns} created")],
    );
    run.ok_contains(
        &n(
            ns,
            &[
                "create",
                "quota",
                "q",
                "--hard=pods=2,requests.cpu=1,configmaps=3",
            ],
        ),
        &["resourcequota/q created"],
    );
    // The ConfigMaps a namespace starts with (upstream publishes kube-root-ca.crt) count too.
    let initial_cms = json_of(run, &n(ns, &["get", "configmaps"]))
        .and_then(|l| l["items"].as_array().map(Vec::len))
        .unwrap_or(0);
    let used = |pods: &str, cpu: &str, cms: usize| format!("{pods} {cpu} {cms}");
    let used_path = "{.status.used.pods} {.status.used.requests\\.cpu} {.status.used.configmaps}";
    let quota_q = n(ns, &["get", "quota", "q"]);
    wait_for(run, &quota_q, used_path, &used("0", "0", initial_cms));
    run.jsonpath(
        &quota_q,
        "{.status.hard.pods} {.status.hard.requests\\.cpu} {.status.hard.configmaps}",
        "2 1 3",
    );

    let file = |name: &str, content: String| -> anyhow::Result<String> {
        let path = dir.join(format!("{ns}-{name}.yaml"));
        std::fs::write(&path, content)?;
        Ok(path.display().to_string())
    };
    let p1 = file("p1", pod("p1", "500m"))?;
    run.ok_contains(&n(ns, &["create", "-f", &p1]), &["pod/p1 created"]);
    wait_for(run, &quota_q, used_path, &used("1", "500m", initial_cms));

    let p2 = file("p2", pod("p2", "600m"))?;
    run.fails_with(
        &n(ns, &["create", "-f", &p2]),
        &[
            "pods \"p2\" is forbidden: exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1",
        ],
    );
    run.fails_with(
        &n(ns, &["run", "nocpu", "--image=nginx:1.25"]),
        &["pods \"nocpu\" is forbidden: failed quota: q: must specify requests.cpu for: nocpu"],
    );
    let p3 = file("p3", pod("p3", "400m"))?;
    run.ok_contains(&n(ns, &["create", "-f", &p3]), &["pod/p3 created"]);
    wait_for(run, &quota_q, used_path, &used("2", "900m", initial_cms));
    let p4 = file("p4", pod("p4", "100m"))?;
    run.fails_with(
        &n(ns, &["create", "-f", &p4]),
        &[
            "pods \"p4\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2",
        ],
    );

    // ConfigMaps up to the limit, then one too many.
    for i in initial_cms..3 {
        let name = format!("cm{i}");
        run.ok_contains(
            &n(ns, &["create", "configmap", &name, "--from-literal=k=v"]),
            &[&format!("configmap/{name} created")],
        );
    }
    wait_for(run, &quota_q, used_path, &used("2", "900m", 3));
    run.fails_with(
        &n(ns, &["create", "configmap", "extra", "--from-literal=k=v"]),
        &[
            "configmaps \"extra\" is forbidden: exceeded quota: q, requested: configmaps=1, used: configmaps=3, limited: configmaps=3",
        ],
    );

    // `get quota`: upstream's v1.36 columns, requests over hard per resource.
    let out = run.ok_contains(&n(ns, &["get", "quota"]), &["q"]);
    let got = tables(&out);
    let want_header = strings(&["NAME", "REQUEST", "LIMIT", "AGE"]);
    let want_request = "configmaps: 3/3, pods: 2/2, requests.cpu: 900m/1";
    let line = out.stdout.lines().find(|l| l.starts_with("q "));
    run.expect(
        got.len() == 1
            && got[0].header == want_header
            && got[0].rows.len() == 1
            && line.is_some_and(|l| l.contains(want_request)),
        &format!("`kubectl get quota`: header {want_header:?}, REQUEST {want_request:?}"),
        &out,
    );
    // `describe quota`: used and hard per resource.
    let out = run.ok_contains(&n(ns, &["describe", "quota", "q"]), &["Name:", "q"]);
    let lines: Vec<Vec<&str>> = out
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let want: [&[&str]; 6] = [
        &["Namespace:", ns],
        &["Resource", "Used", "Hard"],
        &["--------", "----", "----"],
        &["configmaps", "3", "3"],
        &["pods", "2", "2"],
        &["requests.cpu", "900m", "1"],
    ];
    run.expect(
        want.iter()
            .all(|w| lines.iter().any(|l| l.as_slice() == *w)),
        &format!("`kubectl describe quota q` lists {want:?}"),
        &out,
    );

    // Deleting a pod gives its share back.
    run.ok_contains(
        &n(ns, &["delete", "pod", "p3", "--grace-period=0", "--force"]),
        &["pod \"p3\" force deleted"],
    );
    wait_for(run, &quota_q, used_path, &used("1", "500m", 3));
    Ok(())
}

/// A self-signed certificate and its key, PEM.
fn self_signed(host: &str) -> anyhow::Result<(String, String)> {
    let key = rcgen::KeyPair::generate()?;
    let cert = rcgen::CertificateParams::new(vec![host.to_string()])?.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// The decoded value of `data[key]` of a Secret.
fn secret_data(secret: &Value, key: &str) -> Option<String> {
    let encoded = secret["data"][key].as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}

fn secrets(run: &mut Run<'_>, ns: &str, dir: &Path) -> anyhow::Result<()> {
    run.ok_contains(
        &["create", "namespace", ns],
        &[&format!("namespace/{ns} created")],
    );
    let (cert, key) = self_signed("web.example.com")?;
    let cert_file = dir.join(format!("{ns}-tls.crt"));
    let key_file = dir.join(format!("{ns}-tls.key"));
    std::fs::write(&cert_file, &cert)?;
    std::fs::write(&key_file, &key)?;
    let cert_flag = format!("--cert={}", cert_file.display());
    let key_flag = format!("--key={}", key_file.display());
    run.ok_contains(
        &n(
            ns,
            &["create", "secret", "tls", "web-tls", &cert_flag, &key_flag],
        ),
        &["secret/web-tls created"],
    );
    if let Some(secret) = json_of(run, &n(ns, &["get", "secret", "web-tls"])) {
        let keys: Vec<&String> = secret["data"]
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        let tag = run.tag.clone();
        run.failures.check(
            secret["type"] == "kubernetes.io/tls"
                && keys == ["tls.crt", "tls.key"]
                && secret_data(&secret, "tls.crt").as_deref() == Some(cert.as_str())
                && secret_data(&secret, "tls.key").as_deref() == Some(key.as_str()),
            || {
                format!(
                    "[{tag}] secret web-tls: type kubernetes.io/tls, data tls.crt and tls.key \
                     holding the files; got type {} keys {keys:?}",
                    secret["type"]
                )
            },
        );
    }

    run.ok_contains(
        &n(
            ns,
            &[
                "create",
                "secret",
                "docker-registry",
                "registry",
                "--docker-server=registry.example.com",
                "--docker-username=robot",
                "--docker-password=s3cret",
            ],
        ),
        &["secret/registry created"],
    );
    if let Some(secret) = json_of(run, &n(ns, &["get", "secret", "registry"])) {
        let keys: Vec<&String> = secret["data"]
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        let config = secret_data(&secret, ".dockerconfigjson")
            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
            .unwrap_or_default();
        let entry = &config["auths"]["registry.example.com"];
        let auth = base64::engine::general_purpose::STANDARD.encode("robot:s3cret");
        let tag = run.tag.clone();
        run.failures.check(
            secret["type"] == "kubernetes.io/dockerconfigjson"
                && keys == [".dockerconfigjson"]
                && entry["username"] == "robot"
                && entry["password"] == "s3cret"
                && entry["auth"] == auth.as_str(),
            || {
                format!(
                    "[{tag}] secret registry: type kubernetes.io/dockerconfigjson, one key \
                     .dockerconfigjson with the registry's credentials; got type {} keys \
                     {keys:?} config {config}",
                    secret["type"]
                )
            },
        );
    }

    let out = run.ok_contains(&n(ns, &["get", "secrets"]), &["web-tls", "registry"]);
    let got = tables(&out);
    let want_header = strings(&["NAME", "TYPE", "DATA", "AGE"]);
    let cells = |name: &str| {
        got.first()
            .and_then(|t| t.row(0, name))
            .map(|r| r[1..r.len().min(3)].join(" "))
    };
    run.expect(
        got.len() == 1
            && got[0].header == want_header
            && cells("web-tls").as_deref() == Some("kubernetes.io/tls 2")
            && cells("registry").as_deref() == Some("kubernetes.io/dockerconfigjson 1"),
        &format!(
            "`kubectl get secrets`: header {want_header:?}, web-tls kubernetes.io/tls 2, \
             registry kubernetes.io/dockerconfigjson 1"
        ),
        &out,
    );

    // A TLS secret without its key, written as a generic one: the server refuses it.
    let from_file = format!("--from-file=tls.crt={}", cert_file.display());
    run.fails_with(
        &n(
            ns,
            &[
                "create",
                "secret",
                "generic",
                "tls",
                "--type=kubernetes.io/tls",
                &from_file,
            ],
        ),
        &["Secret \"tls\" is invalid: data[tls.key]: Required value"],
    );
    Ok(())
}

fn get_all(run: &mut Run<'_>, ns: &str) {
    run.ok_contains(
        &["create", "namespace", ns],
        &[&format!("namespace/{ns} created")],
    );
    run.ok_contains(
        &n(
            ns,
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx:1.25",
                "--replicas=2",
            ],
        ),
        &["deployment.apps/web created"],
    );
    run.ok_contains(
        &n(
            ns,
            &["create", "service", "clusterip", "web", "--tcp=80:8080"],
        ),
        &["service/web created"],
    );
    if !wait_for(
        run,
        &n(ns, &["get", "deployment", "web"]),
        "{.status.readyReplicas}/{.status.availableReplicas}",
        "2/2",
    ) {
        return;
    }
    let service_ip = json_of(run, &n(ns, &["get", "svc", "web"]))
        .and_then(|s| s["spec"]["clusterIP"].as_str().map(str::to_string))
        .unwrap_or_default();

    let out = run.ok_contains(
        &n(ns, &["get", "all"]),
        &[
            "pod/web-",
            "service/web",
            "deployment.apps/web",
            "replicaset.apps/web-",
        ],
    );
    let got = tables(&out);
    let headers: Vec<&Vec<String>> = got.iter().map(|t| &t.header).collect();
    let want_headers = [
        strings(&["NAME", "READY", "STATUS", "RESTARTS", "AGE"]),
        strings(&[
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
        ]),
        strings(&["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]),
        strings(&["NAME", "DESIRED", "CURRENT", "READY", "AGE"]),
    ];
    let sections_ok = headers.len() == 4 && headers.iter().zip(&want_headers).all(|(g, w)| *g == w);
    run.expect(
        sections_ok,
        &format!("`kubectl get all`: four sections with headers {want_headers:?}"),
        &out,
    );
    if sections_ok {
        let pods = got[0].rows_starting(0, "pod/web-");
        let sets = got[3].rows_starting(0, "replicaset.apps/web-");
        let set_name = sets
            .first()
            .map(|r| r[0].trim_start_matches("replicaset.apps/").to_string())
            .unwrap_or_default();
        let ok = pods.len() == 2
            && got[0].rows.len() == 2
            && pods.iter().all(|r| {
                r.len() == 5
                    && r[0].starts_with(&format!("pod/{set_name}-"))
                    && starts(&r[1..], &["1/1", "Running", "0"])
            })
            && got[1].rows.len() == 1
            && starts(
                &got[1].rows[0],
                &["service/web", "ClusterIP", &service_ip, "<none>", "80/TCP"],
            )
            && got[2].rows.len() == 1
            && starts(&got[2].rows[0], &["deployment.apps/web", "2/2", "2", "2"])
            && sets.len() == 1
            && got[3].rows.len() == 1
            && starts(&sets[0][1..], &["2", "2", "2"]);
        run.expect(
            ok,
            &format!(
                "`kubectl get all`: two pods of the ReplicaSet 1/1 Running 0; service/web \
                 ClusterIP {service_ip} <none> 80/TCP; deployment.apps/web 2/2 2 2; one \
                 replicaset.apps/web-<hash> 2 2 2"
            ),
            &out,
        );
    }

    // Across namespaces: the cluster's own `kubernetes` Service comes too.
    let out = run.ok_contains(
        &["get", "all", "-A"],
        &["service/kubernetes", "deployment.apps/web"],
    );
    let got = tables(&out);
    let service_table = got.iter().find(|t| {
        t.header
            == strings(&[
                "NAMESPACE",
                "NAME",
                "TYPE",
                "CLUSTER-IP",
                "EXTERNAL-IP",
                "PORT(S)",
                "AGE",
            ])
    });
    let kubernetes = service_table.and_then(|t| t.row(1, "service/kubernetes"));
    let mine = service_table.and_then(|t| t.rows.iter().find(|r| starts(r, &[ns, "service/web"])));
    run.expect(
        got.iter()
            .all(|t| t.header.first().map(String::as_str) == Some("NAMESPACE"))
            && kubernetes.is_some_and(|r| {
                starts(
                    r,
                    &[
                        "default",
                        "service/kubernetes",
                        "ClusterIP",
                        "10.96.0.1",
                        "<none>",
                        "443/TCP",
                    ],
                )
            })
            && mine.is_some(),
        &format!(
            "`kubectl get all -A`: a NAMESPACE column everywhere, default service/kubernetes \
             ClusterIP 10.96.0.1 <none> 443/TCP, and {ns}'s service/web"
        ),
        &out,
    );
}

fn scenario(kubectl: &Path, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = Server::start_with_args(
        Options {
            storage: Storage::InMemory,
            port: 0,
            kubeconfig: dir.path().join("kubeconfig"),
        },
        &["--simulate"],
    )?;
    let mut run = Run {
        kubectl,
        server: &server,
        tag: kubectl.display().to_string(),
        failures,
    };
    services(&mut run, "svc");
    quota(&mut run, "quota", dir.path())?;
    secrets(&mut run, "sec", dir.path())?;
    get_all(&mut run, "all");
    Ok(())
}

#[test]
fn kubectl_create_service_quota_secret_and_get_all() {
    for_each_kubectl("kubectl_create_service_quota_secret_and_get_all", scenario);
}
