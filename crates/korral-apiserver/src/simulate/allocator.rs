//! The structured-parameters device allocator of the scheduler's DRA plugin, for the one
//! simulated node: which devices of the published ResourceSlices satisfy a ResourceClaim.
//!
//! As upstream's allocator (`k8s.io/dynamic-resource-allocation/structured`): a pool counts
//! when its slices of the newest generation are all published; a device is available on the
//! node when its slice (or, with `perDeviceNodeSelection`, the device itself) names the node
//! or all nodes; devices in other claims' allocations are taken unless they allow multiple
//! allocations or the result is for admin access. Each request (`exactly`, or the first
//! `firstAvailable` subrequest that fits) takes `count` devices (`ExactCount`, one by
//! default) or every matching device (`All`, which then must all be free), each selected by
//! its class's selectors and its own (CEL, see [`crate::kinds::device_selected`]), with
//! untolerated `NoSchedule`/`NoExecute` device taints excluded; `matchAttribute`
//! constraints require one value of the attribute across the devices of their requests.
//! The search backtracks over the choices, as upstream's does. The result carries the
//! classes' configuration (`FromClass`) before the claim's (`FromClaim`), and a node
//! selector naming the node when a device is local to it.
//!
//! Not modelled: consumable capacity and shared counters of partitionable devices, binding
//! conditions, node selectors on slices (a slice with one is not on the simulated node).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value, json};

/// The scheduler's reason when the devices do not suffice.
pub const CANNOT_ALLOCATE: &str = "cannot allocate all claims";

/// How many devices the search may try before it gives up, as upstream's allocator bounds
/// its own work.
const SEARCH_BUDGET: usize = 100_000;

/// One device on the node, as the allocator sees it.
#[derive(Debug, Clone)]
pub struct Device {
    /// The driver publishing it.
    pub driver: String,
    /// Its pool.
    pub pool: String,
    /// Its name in the pool.
    pub name: String,
    /// The `kubernetes.DRADevice` value selectors see.
    pub cel: Value,
    /// Its taints.
    pub taints: Vec<Value>,
    /// Whether it may be allocated to several claims at once.
    pub shareable: bool,
    /// Whether it is available on this node only (a node-local slice).
    pub node_local: bool,
}

impl Device {
    /// The `(driver, pool, device)` identity allocations name it by.
    pub fn id(&self) -> (String, String, String) {
        (self.driver.clone(), self.pool.clone(), self.name.clone())
    }
}

/// The devices of `slices` available on `node` (complete pools of their newest generation).
pub fn devices_on(slices: &[Value], node: &str) -> Vec<Device> {
    // The newest generation of each pool, and its slices.
    let mut pools: BTreeMap<(String, String), (i64, Vec<&Value>)> = BTreeMap::new();
    for slice in slices {
        let spec = &slice["spec"];
        let key = (
            text(spec, "driver").to_string(),
            text(&spec["pool"], "name").to_string(),
        );
        let generation = spec["pool"]["generation"].as_i64().unwrap_or(0);
        let entry = pools.entry(key).or_insert((generation, Vec::new()));
        if generation > entry.0 {
            *entry = (generation, Vec::new());
        }
        if generation == entry.0 {
            entry.1.push(slice);
        }
    }
    let mut out = Vec::new();
    for ((driver, pool), (_, slices)) in pools {
        let expected = slices
            .first()
            .and_then(|s| s["spec"]["pool"]["resourceSliceCount"].as_i64())
            .unwrap_or(1);
        if slices.len() as i64 != expected {
            continue; // an incomplete pool is not used
        }
        for slice in slices {
            let spec = &slice["spec"];
            let slice_place = placement(spec, node);
            let per_device = spec["perDeviceNodeSelection"].as_bool() == Some(true);
            for device in spec["devices"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                let place = if per_device {
                    placement(device, node)
                } else {
                    slice_place
                };
                let Some(node_local) = place else { continue };
                out.push(Device {
                    driver: driver.clone(),
                    pool: pool.clone(),
                    name: text(device, "name").to_string(),
                    cel: cel_device(&driver, device),
                    taints: device["taints"].as_array().cloned().unwrap_or_default(),
                    shareable: device["allowMultipleAllocations"].as_bool() == Some(true),
                    node_local,
                });
            }
        }
    }
    out
}

/// Where a slice or device is available: `Some(true)` on `node` only, `Some(false)` on all
/// nodes, `None` not on `node`.
fn placement(obj: &Value, node: &str) -> Option<bool> {
    if obj["allNodes"].as_bool() == Some(true) {
        return Some(false);
    }
    (text(obj, "nodeName") == node).then_some(true)
}

/// The `kubernetes.DRADevice` value of a published device: attributes and capacities by
/// domain (an unqualified name belongs to the driver's domain), attribute values unwrapped.
fn cel_device(driver: &str, device: &Value) -> Value {
    let by_domain = |field: &str, value: &dyn Fn(&Value) -> Value| {
        let mut domains: Map<String, Value> = Map::new();
        if let Some(map) = device[field].as_object() {
            for (qualified, v) in map {
                let (domain, id) = qualified.split_once('/').unwrap_or((driver, qualified));
                if let Value::Object(ids) = domains
                    .entry(domain.to_string())
                    .or_insert_with(|| json!({}))
                {
                    ids.insert(id.to_string(), value(v));
                }
            }
        }
        Value::Object(domains)
    };
    // A version stays tagged (`{"version": "1.2.3"}`): selectors see it as a semver.
    let attribute = |v: &Value| {
        ["int", "bool", "string"]
            .iter()
            .find_map(|k| v.get(*k).cloned())
            .or_else(|| v.get("version").map(|s| json!({ "version": s })))
            .unwrap_or(Value::Null)
    };
    let capacity = |v: &Value| v.get("value").cloned().unwrap_or(Value::Null);
    json!({
        "driver": driver,
        "attributes": by_domain("attributes", &attribute),
        "capacity": by_domain("capacity", &capacity),
        "allowMultipleAllocations": device["allowMultipleAllocations"].as_bool().unwrap_or(false),
    })
}

/// What a claim asks of one request alternative.
#[derive(Debug, Clone)]
struct Want {
    /// The name results carry (`request` or `request/subrequest`).
    result_name: String,
    /// The request's top-level name (constraints and configuration name these).
    request: String,
    /// The class.
    class: String,
    /// Class selectors, then the request's.
    selectors: Vec<String>,
    /// `Some(n)` for ExactCount, `None` for All.
    count: Option<usize>,
    /// Admin access (devices in use stay available; results say so).
    admin: bool,
    /// The request's tolerations.
    tolerations: Vec<Value>,
    /// The devices its selectors select and its tolerations allow (in use or not),
    /// evaluated once before the search.
    matching: Vec<usize>,
}

/// Allocates `spec` (a ResourceClaim spec) from `devices`, with `classes` by name and the
/// devices `taken` by other allocations: the `status.allocation`, or why it cannot be made.
pub fn allocate(
    spec: &Value,
    classes: &HashMap<String, Value>,
    devices: &[Device],
    taken: &HashSet<(String, String, String)>,
    node: &str,
) -> Result<Value, String> {
    let requests = spec["devices"]["requests"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    // Each request's alternatives, in preference order.
    let mut alternatives: Vec<Vec<Want>> = Vec::new();
    for request in requests {
        let name = text(request, "name");
        let mut options = Vec::new();
        if let Some(exactly) = request.get("exactly").filter(|v| v.is_object()) {
            options.push(want(name, name, exactly, classes)?);
        }
        for sub in request["firstAvailable"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            let result = format!("{name}/{}", text(sub, "name"));
            options.push(want(&result, name, sub, classes)?);
        }
        for option in &mut options {
            option.matching = matching(devices, option)?;
        }
        alternatives.push(options);
    }
    let constraints: Vec<(Vec<String>, String)> = spec["devices"]["constraints"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .filter_map(|c| {
            let attribute = c["matchAttribute"].as_str()?.to_string();
            let requests = c["requests"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            Some((requests, attribute))
        })
        .collect();
    let mut search = Search {
        devices,
        taken,
        constraints: &constraints,
        budget: SEARCH_BUDGET,
        chosen: Vec::new(),
        used: HashSet::new(),
    };
    if !search.requests(&alternatives, 0)? {
        return Err(CANNOT_ALLOCATE.to_string());
    }
    let chosen = search.chosen;
    let results: Vec<Value> = chosen
        .iter()
        .map(|(want, device)| {
            let mut result = json!({
                "request": want.result_name,
                "driver": devices[*device].driver,
                "pool": devices[*device].pool,
                "device": devices[*device].name,
            });
            if want.admin {
                result["adminAccess"] = json!(true);
            }
            result
        })
        .collect();
    // Class configuration per allocated request, then the claim's.
    let mut config = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (want, _) in &chosen {
        if !seen.insert(want.result_name.clone()) {
            continue;
        }
        let class_config = classes
            .get(&want.class)
            .and_then(|c| c["spec"]["config"].as_array())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for c in class_config {
            if let Some(opaque) = c.get("opaque") {
                config.push(json!({"source": "FromClass", "requests": [want.result_name], "opaque": opaque}));
            }
        }
    }
    for c in spec["devices"]["config"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        if let Some(opaque) = c.get("opaque") {
            let mut entry = json!({"source": "FromClaim", "opaque": opaque});
            if let Some(requests) = c.get("requests").filter(|r| !r.is_null()) {
                entry["requests"] = requests.clone();
            }
            config.push(entry);
        }
    }
    let mut devices_result = json!({"results": results});
    if !config.is_empty() {
        devices_result["config"] = Value::Array(config);
    }
    let mut allocation = json!({"devices": devices_result});
    if chosen.iter().any(|(_, d)| devices[*d].node_local) {
        allocation["nodeSelector"] = json!({"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]});
    }
    Ok(allocation)
}

/// One request alternative's wants; a missing class is an error, as upstream's.
fn want(
    result_name: &str,
    request: &str,
    body: &Value,
    classes: &HashMap<String, Value>,
) -> Result<Want, String> {
    let class = text(body, "deviceClassName");
    let Some(class_obj) = classes.get(class) else {
        return Err(format!(
            "request {result_name}: device class {class} does not exist"
        ));
    };
    let cel = |list: &Value| -> Vec<String> {
        list.as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .filter_map(|s| s["cel"]["expression"].as_str().map(str::to_string))
            .collect()
    };
    let mut selectors = cel(&class_obj["spec"]["selectors"]);
    selectors.extend(cel(&body["selectors"]));
    let count = match body["allocationMode"].as_str() {
        Some("All") => None,
        _ => Some(body["count"].as_u64().unwrap_or(1) as usize),
    };
    Ok(Want {
        result_name: result_name.to_string(),
        request: request.to_string(),
        class: class.to_string(),
        selectors,
        count,
        admin: body["adminAccess"].as_bool() == Some(true),
        tolerations: body["tolerations"].as_array().cloned().unwrap_or_default(),
        matching: Vec::new(),
    })
}

/// The backtracking search's state.
struct Search<'a> {
    devices: &'a [Device],
    taken: &'a HashSet<(String, String, String)>,
    constraints: &'a [(Vec<String>, String)],
    budget: usize,
    /// Devices chosen so far, with the want they satisfy.
    chosen: Vec<(&'a Want, usize)>,
    /// Indexes of chosen devices (no device twice in one claim).
    used: HashSet<usize>,
}

impl<'a> Search<'a> {
    /// Satisfies requests `i..`; `Ok(false)` when no choice works.
    fn requests(&mut self, alternatives: &'a [Vec<Want>], i: usize) -> Result<bool, String> {
        let Some(options) = alternatives.get(i) else {
            return Ok(true);
        };
        for want in options {
            let candidates = self.candidates(want);
            match want.count {
                None => {
                    // All: every matching device, all of them free.
                    let matching = &want.matching;
                    if matching.is_empty() || matching.len() != candidates.len() {
                        continue;
                    }
                    let mark = self.chosen.len();
                    if matching.iter().all(|d| self.take(want, *d))
                        && self.requests(alternatives, i + 1)?
                    {
                        return Ok(true);
                    }
                    self.undo(mark);
                }
                Some(n) => {
                    if self.pick(want, &candidates, 0, n, alternatives, i)? {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    /// Picks `n` more devices for `want` from `candidates[from..]`, then the next requests.
    fn pick(
        &mut self,
        want: &'a Want,
        candidates: &[usize],
        from: usize,
        n: usize,
        alternatives: &'a [Vec<Want>],
        i: usize,
    ) -> Result<bool, String> {
        if n == 0 {
            return self.requests(alternatives, i + 1);
        }
        for (k, &d) in candidates.iter().enumerate().skip(from) {
            if self.budget == 0 {
                return Err("allocation search exceeded its budget".to_string());
            }
            self.budget -= 1;
            let mark = self.chosen.len();
            if self.take(want, d) && self.pick(want, candidates, k + 1, n - 1, alternatives, i)? {
                return Ok(true);
            }
            self.undo(mark);
        }
        Ok(false)
    }

    /// Matching devices still free for `want`.
    fn candidates(&self, want: &Want) -> Vec<usize> {
        want.matching
            .iter()
            .copied()
            .filter(|d| !self.used.contains(d))
            .filter(|d| {
                let device = &self.devices[*d];
                want.admin || device.shareable || !self.taken.contains(&device.id())
            })
            .collect()
    }

    /// Takes device `d` for `want` if the constraints allow it.
    fn take(&mut self, want: &'a Want, d: usize) -> bool {
        if self.used.contains(&d) {
            return false;
        }
        for (requests, attribute) in self.constraints {
            let applies =
                |request: &str| requests.is_empty() || requests.iter().any(|r| r == request);
            if !applies(&want.request) {
                continue;
            }
            let Some(value) = attribute_of(&self.devices[d], attribute) else {
                return false; // a constrained device must have the attribute
            };
            let conflict = self.chosen.iter().any(|(w, other)| {
                applies(&w.request)
                    && attribute_of(&self.devices[*other], attribute) != Some(value.clone())
            });
            if conflict {
                return false;
            }
        }
        self.used.insert(d);
        self.chosen.push((want, d));
        true
    }

    /// Drops choices made after `mark`.
    fn undo(&mut self, mark: usize) {
        for (_, d) in self.chosen.drain(mark..) {
            self.used.remove(&d);
        }
    }
}

/// Devices matching `want`'s selectors and tolerations (in use or not).
fn matching(devices: &[Device], want: &Want) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for (d, device) in devices.iter().enumerate() {
        if !device
            .taints
            .iter()
            .all(|t| tolerated(t, &want.tolerations))
        {
            continue;
        }
        let mut selected = true;
        for selector in &want.selectors {
            match crate::kinds::device_selected(selector, &device.cel) {
                Ok(true) => {}
                Ok(false) => {
                    selected = false;
                    break;
                }
                Err(e) => {
                    return Err(format!(
                        "request {}: selector {selector:?} on device {}/{}/{}: {e}",
                        want.result_name, device.driver, device.pool, device.name
                    ));
                }
            }
        }
        if selected {
            out.push(d);
        }
    }
    Ok(out)
}

/// The value of a fully qualified attribute (`domain/name`) of a device.
fn attribute_of(device: &Device, qualified: &str) -> Option<Value> {
    let (domain, id) = qualified.split_once('/')?;
    device.cel["attributes"][domain].get(id).cloned()
}

/// Whether one of `tolerations` tolerates `taint` (only `NoSchedule`/`NoExecute` taints keep
/// a device from being allocated), as upstream's `DeviceToleration.ToleratesTaint`.
fn tolerated(taint: &Value, tolerations: &[Value]) -> bool {
    let effect = text(taint, "effect");
    if effect != "NoSchedule" && effect != "NoExecute" {
        return true;
    }
    tolerations.iter().any(|t| {
        let t_effect = text(t, "effect");
        if !t_effect.is_empty() && t_effect != effect {
            return false;
        }
        let key = text(t, "key");
        if !key.is_empty() && key != text(taint, "key") {
            return false;
        }
        match t["operator"].as_str().unwrap_or("Equal") {
            "Exists" => true,
            _ => !key.is_empty() && text(t, "value") == text(taint, "value"),
        }
    })
}

/// A string member (`""` when absent).
fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "korral-node";

    fn slice(name: &str, driver: &str, devices: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": {"driver": driver, "nodeName": NODE,
            "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1}, "devices": devices}})
    }

    fn gpus() -> Vec<Device> {
        devices_on(
            &[slice(
                "s",
                "gpu.example.com",
                json!([
                    {"name": "gpu-0", "attributes": {"model": {"string": "a100"}, "numa": {"int": 0}}, "capacity": {"memory": {"value": "40Gi"}}},
                    {"name": "gpu-1", "attributes": {"model": {"string": "a100"}, "numa": {"int": 1}}},
                    {"name": "gpu-2", "attributes": {"model": {"string": "t4"}, "numa": {"int": 1}}},
                ]),
            )],
            NODE,
        )
    }

    fn classes() -> HashMap<String, Value> {
        HashMap::from([(
            "gpu".to_string(),
            json!({"spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
                "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"mode": "x"}}}]}}),
        )])
    }

    fn claim(requests: Value) -> Value {
        json!({"devices": {"requests": requests}})
    }

    fn names(allocation: &Value) -> Vec<String> {
        allocation["devices"]["results"]
            .as_array()
            .map(|r| {
                r.iter()
                    .map(|r| {
                        format!(
                            "{}={}",
                            r["request"].as_str().unwrap_or(""),
                            r["device"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn pools_need_every_slice_of_their_newest_generation() {
        let mut old = slice("old", "d", json!([{"name": "x"}]));
        old["spec"]["pool"]["generation"] = json!(0);
        let mut partial = slice("p", "e", json!([{"name": "y"}]));
        partial["spec"]["pool"]["resourceSliceCount"] = json!(2);
        let mut elsewhere = slice("o", "f", json!([{"name": "z"}]));
        elsewhere["spec"]["nodeName"] = json!("other");
        let everywhere = json!({"spec": {"driver": "g", "allNodes": true,
            "pool": {"name": "net", "generation": 3, "resourceSliceCount": 1}, "devices": [{"name": "w"}]}});
        let new = slice("new", "d", json!([{"name": "x2"}]));
        let found = devices_on(&[old, new, partial, elsewhere, everywhere], NODE);
        let ids: Vec<(String, bool)> = found
            .iter()
            .map(|d| (d.name.clone(), d.node_local))
            .collect();
        assert_eq!(ids, [("x2".to_string(), true), ("w".to_string(), false)]);
    }

    #[test]
    fn exact_count_all_and_selectors() {
        let one = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 't4'"}}]}}]));
        let got = allocate(&one, &classes(), &gpus(), &HashSet::new(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-2"]);
        assert_eq!(got["devices"]["config"][0]["source"], "FromClass");
        assert_eq!(got["devices"]["config"][0]["requests"], json!(["g"]));
        assert_eq!(
            got["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"],
            json!([NODE])
        );

        let two = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 2}}]));
        let got = allocate(&two, &classes(), &gpus(), &HashSet::new(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-0", "g=gpu-1"]);

        let all = claim(
            json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]),
        );
        let got = allocate(&all, &classes(), &gpus(), &HashSet::new(), NODE).expect("allocates");
        assert_eq!(names(&got).len(), 3);
        // All needs every matching device free.
        let taken = HashSet::from([(
            "gpu.example.com".to_string(),
            NODE.to_string(),
            "gpu-1".to_string(),
        )]);
        assert!(allocate(&all, &classes(), &gpus(), &taken, NODE).is_err());
        // Taken devices are skipped for ExactCount.
        let got = allocate(&two, &classes(), &gpus(), &taken, NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-0", "g=gpu-2"]);
    }

    #[test]
    fn selectors_compare_capacities_as_quantities_and_versions_as_semvers() {
        let devices = devices_on(
            &[slice(
                "v",
                "gpu.example.com",
                json!([
                    {"name": "gpu-0", "attributes": {"driverVersion": {"version": "1.9.0"}},
                        "capacity": {"memory": {"value": "40Gi"}}},
                    {"name": "gpu-1", "attributes": {"driverVersion": {"version": "1.2.0"}},
                        "capacity": {"memory": {"value": "40000Mi"}}},
                    {"name": "gpu-3", "attributes": {"driverVersion": {"version": "1.10.0"}},
                        "capacity": {"memory": {"value": "80Gi"}}},
                ]),
            )],
            NODE,
        );
        let big = claim(
            json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 2,
            "selectors": [{"cel": {"expression":
                "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"}}]}}]),
        );
        let got = allocate(&big, &classes(), &devices, &HashSet::new(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-0", "g=gpu-3"]);
        let newer = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression":
                "device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.9.0'))"}}]}}]));
        let got = allocate(&newer, &classes(), &devices, &HashSet::new(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-3"]);
    }

    #[test]
    fn constraints_backtrack_and_first_available_falls_back() {
        // Two devices on one NUMA node: gpu-0 alone on numa 0, so gpu-1 and gpu-2 are chosen.
        let same_numa = json!({"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 2}}],
            "constraints": [{"matchAttribute": "gpu.example.com/numa"}]}});
        let got =
            allocate(&same_numa, &classes(), &gpus(), &HashSet::new(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-1", "g=gpu-2"]);
        // firstAvailable: no h100, so the a100 subrequest.
        let first = claim(json!([{"name": "g", "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'h100'"}}]},
            {"name": "small", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'a100'"}}]}]}]));
        let got = allocate(&first, &classes(), &gpus(), &HashSet::new(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g/small=gpu-0"]);
        assert_eq!(got["devices"]["config"][0]["requests"], json!(["g/small"]));
    }

    #[test]
    fn failures_say_why() {
        let four = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 4}}]));
        assert_eq!(
            allocate(&four, &classes(), &gpus(), &HashSet::new(), NODE),
            Err("cannot allocate all claims".to_string())
        );
        let no_class = claim(json!([{"name": "g", "exactly": {"deviceClassName": "nope"}}]));
        assert_eq!(
            allocate(&no_class, &classes(), &gpus(), &HashSet::new(), NODE),
            Err("request g: device class nope does not exist".to_string())
        );
        let missing = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].nothing == 1"}}]}}]));
        let err =
            allocate(&missing, &classes(), &gpus(), &HashSet::new(), NODE).expect_err("fails");
        assert!(err.contains("CEL runtime error"), "{err}");
    }

    #[test]
    fn taints_need_tolerations_and_admin_access_shares() {
        let mut devices = gpus();
        devices.truncate(1);
        devices[0].taints = vec![json!({"key": "broken", "effect": "NoSchedule"})];
        let plain = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu"}}]));
        assert!(allocate(&plain, &classes(), &devices, &HashSet::new(), NODE).is_err());
        let tolerating = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "tolerations": [{"key": "broken", "operator": "Exists"}]}}]));
        assert!(allocate(&tolerating, &classes(), &devices, &HashSet::new(), NODE).is_ok());
        devices[0].taints.clear();
        let taken = HashSet::from([devices[0].id()]);
        assert!(allocate(&plain, &classes(), &devices, &taken, NODE).is_err());
        let admin = claim(
            json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "adminAccess": true}}]),
        );
        let got = allocate(&admin, &classes(), &devices, &taken, NODE).expect("allocates");
        assert_eq!(got["devices"]["results"][0]["adminAccess"], true);
    }
}
