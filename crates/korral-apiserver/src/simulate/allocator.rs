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
//! Partitionable devices (KEP-4815, `DRAPartitionableDevices`, beta and on by default since
//! v1.36), as upstream's `incubating` allocator: a pool's shared counter sets are those of
//! its slices carrying `sharedCounters` (whichever node those slices name); a device drawing
//! on them (`consumesCounters`) is a candidate only while the draws of the devices already
//! allocated (other claims' allocations, admin access excepted) and of those picked so far
//! in this allocation (admin access included), its own added, stay within every counter of
//! the pool. A pool whose devices draw on a counter set or counter it does not publish, or
//! that publishes one counter set twice, is invalid: its devices are not used.
//!
//! Consumable capacity (KEP-5075, beta since v1.36), see [`consumable`]: every device's
//! capacities bound what requests naming `capacity.requests` may take of it; a device
//! allowing multiple allocations is shared, by other claims and by other requests of the same
//! claim (not twice by one request), while its capacities last; each such result carries a
//! new `shareID` and its `consumedCapacity`, and its draws on shared counters are counted
//! once.
//!
//! A slice (or, with `perDeviceNodeSelection`, a device) is on the node when it names it,
//! names all nodes, or has a `nodeSelector` the Node matches ([`node_selection`]); an
//! allocation of a device local to the node is restricted to the node, one of devices
//! selected by node selectors to their requirements (merged into one term), as upstream's
//! `createNodeSelector`. A pool with two devices of one name among its slices on the node is
//! invalid, and one whose slices are not all published (being updated) refuses `All`
//! requests, with upstream's messages.
//!
//! Not modelled: binding conditions.

mod consumable;
mod node_selection;

pub use node_selection::matches as node_matches;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::quantity::{self, Quantity};
use consumable::{Amounts, Capacity};

/// A device's identity: `(driver, pool, device)`.
pub type DeviceId = (String, String, String);

/// What other allocations hold: the devices of their results (admin access results
/// excepted, as upstream's scheduler counts them) and what shared devices' results consume.
#[derive(Debug, Clone, Default)]
pub struct InUse {
    /// Devices in other allocations.
    pub devices: HashSet<DeviceId>,
    /// The capacity other allocations consume of each shared device.
    pub consumed: HashMap<DeviceId, Amounts>,
}

impl InUse {
    /// Counts one allocation result (`status.allocation.devices.results[*]`).
    pub fn record(&mut self, result: &Value) {
        if result["adminAccess"].as_bool() == Some(true) {
            return;
        }
        let id = (
            text(result, "driver").to_string(),
            text(result, "pool").to_string(),
            text(result, "device").to_string(),
        );
        if result.get("shareID").is_some_and(Value::is_string) {
            let consumed: Amounts = result["consumedCapacity"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(name, v)| Some((name.clone(), Quantity::parse(v.as_str()?).ok()?)))
                .collect();
            consumable::add(self.consumed.entry(id.clone()).or_default(), &consumed);
        }
        self.devices.insert(id);
    }
}

/// The scheduler's reason when the devices do not suffice.
pub const CANNOT_ALLOCATE: &str = "cannot allocate all claims";

/// Upstream's reason when the devices do not suffice and some pool on the node is invalid.
pub const INVALID_POOLS: &str = "invalid resource pools were encountered";

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
    /// Where it is available.
    pub placement: Placement,
    /// What it draws on its pool's shared counters when allocated.
    pub draws: Vec<Draw>,
    /// Its capacities, by name.
    pub capacity: BTreeMap<String, Capacity>,
}

/// Where a device is available.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// On this node only (its slice or itself names the node).
    Node,
    /// On every node.
    Everywhere,
    /// On the nodes its node selector selects: the selector's term.
    Selected(Value),
}

/// A device's draw on one counter of one of its pool's shared counter sets.
#[derive(Debug, Clone)]
pub struct Draw {
    /// The counter set.
    pub set: String,
    /// The counter in the set.
    pub counter: String,
    /// How much of it the device takes.
    pub amount: Quantity,
}

/// The shared counters of one pool.
#[derive(Debug, Clone, Default)]
pub struct PoolCounters {
    /// The published counter sets: counter name to value, by set name.
    pub sets: BTreeMap<String, BTreeMap<String, Quantity>>,
    /// The draws of every device of the pool (on this node or not), by device name: devices
    /// other claims hold draw on the counters wherever they are.
    pub draws: BTreeMap<String, Vec<Draw>>,
}

/// What the allocator sees of the published ResourceSlices on a node.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    /// The devices available on the node.
    pub devices: Vec<Device>,
    /// The shared counters of the pools with any, by `(driver, pool)`.
    pub counters: BTreeMap<(String, String), PoolCounters>,
    /// The invalid pools (`driver/pool`) and why, as upstream's `Pool.InvalidReason`.
    pub invalid: Vec<(String, String)>,
    /// The pools on the node not all of whose slices are published (`driver/pool`).
    pub incomplete: Vec<String>,
}

impl Device {
    /// The `(driver, pool, device)` identity allocations name it by.
    pub fn id(&self) -> (String, String, String) {
        (self.driver.clone(), self.pool.clone(), self.name.clone())
    }
}

/// The devices of `slices` available on `node` (a Node object; complete pools of their
/// newest generation) and the pools' shared counters.
pub fn devices_on(slices: &[Value], node: &Value) -> Inventory {
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
    let mut out = Inventory::default();
    for ((driver, pool), (_, slices)) in pools {
        if !slices.iter().any(|s| relevant(&s["spec"], node)) {
            continue;
        }
        let expected = slices
            .first()
            .and_then(|s| s["spec"]["pool"]["resourceSliceCount"].as_i64())
            .unwrap_or(1);
        if slices.len() as i64 != expected {
            out.incomplete.push(format!("{driver}/{pool}"));
            continue; // an incomplete pool is not used
        }
        let counters =
            match duplicate_device(&slices, node).map_or_else(|| pool_counters(&slices), Err) {
                Ok(counters) => counters,
                Err(reason) => {
                    out.invalid.push((format!("{driver}/{pool}"), reason));
                    continue; // an invalid pool is not used
                }
            };
        for slice in slices {
            let spec = &slice["spec"];
            let slice_place = placement(spec, node);
            let per_device = spec["perDeviceNodeSelection"].as_bool() == Some(true);
            for device in spec["devices"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                let place = if per_device {
                    placement(device, node)
                } else {
                    slice_place.clone()
                };
                let Some(placement) = place else { continue };
                let name = text(device, "name");
                out.devices.push(Device {
                    driver: driver.clone(),
                    pool: pool.clone(),
                    name: name.to_string(),
                    cel: cel_device(&driver, device),
                    taints: device["taints"].as_array().cloned().unwrap_or_default(),
                    shareable: device["allowMultipleAllocations"].as_bool() == Some(true),
                    placement,
                    draws: counters.draws.get(name).cloned().unwrap_or_default(),
                    capacity: consumable::capacities(device),
                });
            }
        }
        if !counters.sets.is_empty() {
            out.counters.insert((driver, pool), counters);
        }
    }
    out
}

/// The shared counters of a complete pool's `slices`, or why the pool is invalid (upstream's
/// `getAndValidateCounterSets` and `validateDeviceCounterConsumption`, with its messages).
fn pool_counters(slices: &[&Value]) -> Result<PoolCounters, String> {
    let mut out = PoolCounters::default();
    for slice in slices {
        for set in slice["spec"]["sharedCounters"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            let name = text(set, "name");
            if out.sets.contains_key(name) {
                return Err(format!("duplicate counter set name {name}"));
            }
            let mut counters = BTreeMap::new();
            for (counter, value) in set["counters"].as_object().into_iter().flatten() {
                counters.insert(counter.clone(), counter_value(value)?);
            }
            out.sets.insert(name.to_string(), counters);
        }
    }
    for slice in slices {
        for device in slice["spec"]["devices"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            let mut draws = Vec::new();
            for consumption in device["consumesCounters"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[])
            {
                let set_name = text(consumption, "counterSet");
                let Some(set) = out.sets.get(set_name) else {
                    return Err(format!("counter set {set_name} not found"));
                };
                for (counter, value) in consumption["counters"].as_object().into_iter().flatten() {
                    if !set.contains_key(counter) {
                        return Err(format!(
                            "counter {counter} not found in counter set {set_name}"
                        ));
                    }
                    draws.push(Draw {
                        set: set_name.to_string(),
                        counter: counter.clone(),
                        amount: counter_value(value)?,
                    });
                }
            }
            if !draws.is_empty() {
                out.draws.insert(text(device, "name").to_string(), draws);
            }
        }
    }
    Ok(out)
}

/// The quantity of a counter (`{"value": "40Gi"}`); validation admits only well-formed ones.
fn counter_value(counter: &Value) -> Result<Quantity, String> {
    quantity::from_json(&counter["value"]).map_err(|e| format!("counter value: {e}"))
}

/// Where a slice or device is available: `Some(true)` on `node` only, `Some(false)` on all
/// nodes, `None` not on `node`.
/// Where a slice's (or a device's) devices are, seen from `node`; `None`: not on it.
fn placement(obj: &Value, node: &Value) -> Option<Placement> {
    if obj["allNodes"].as_bool() == Some(true) {
        return Some(Placement::Everywhere);
    }
    let name = text(obj, "nodeName");
    if !name.is_empty() {
        return (name == text(&node["metadata"], "name")).then_some(Placement::Node);
    }
    let selector = obj.get("nodeSelector").filter(|s| s.is_object())?;
    node_selection::matches(selector, node)
        .then(|| Placement::Selected(selector["nodeSelectorTerms"][0].clone()))
}

/// Whether a slice's `spec` concerns `node`: it publishes shared counters (needed wherever
/// its pool's devices are) or devices on the node.
fn relevant(spec: &Value, node: &Value) -> bool {
    if spec["sharedCounters"]
        .as_array()
        .is_some_and(|c| !c.is_empty())
    {
        return true;
    }
    if spec["perDeviceNodeSelection"].as_bool() == Some(true) {
        return spec["devices"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|d| placement(d, node).is_some());
    }
    placement(spec, node).is_some()
}

/// Upstream's "duplicate device name" among the pool's device slices on `node`.
fn duplicate_device(slices: &[&Value], node: &Value) -> Option<String> {
    let mut seen = HashSet::new();
    slices
        .iter()
        .map(|s| &s["spec"])
        .filter(|spec| spec["sharedCounters"].as_array().is_none_or(Vec::is_empty))
        .filter(|spec| relevant(spec, node))
        .flat_map(|spec| spec["devices"].as_array().into_iter().flatten())
        .map(|d| text(d, "name"))
        .find(|name| !seen.insert(*name))
        .map(|name| format!("duplicate device name {name}"))
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
    /// Its `capacity.requests`.
    capacity: Amounts,
    /// The devices its selectors select and its tolerations allow (in use or not),
    /// evaluated once before the search.
    matching: Vec<usize>,
}

/// Allocates `spec` (a ResourceClaim spec) from the `inventory` of the node, with `classes`
/// by name and what other allocations hold (`in_use`): the `status.allocation`, or why it
/// cannot be made.
pub fn allocate(
    spec: &Value,
    classes: &HashMap<String, Value>,
    inventory: &Inventory,
    in_use: &InUse,
    node: &str,
) -> Result<Value, String> {
    let taken = &in_use.devices;
    let devices = inventory.devices.as_slice();
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
            // Upstream refuses to count "all" devices while a pool on the node is invalid or
            // being updated.
            if option.count.is_none() {
                if let Some((pool, _)) = inventory.invalid.first() {
                    return Err(format!(
                        "request {}: asks for all devices, but resource pool {pool} is currently invalid",
                        option.result_name
                    ));
                }
                if let Some(pool) = inventory.incomplete.first() {
                    return Err(format!(
                        "request {}: asks for all devices, but resource pool {pool} is currently being updated",
                        option.result_name
                    ));
                }
            }
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
        consumed: &in_use.consumed,
        counters: &inventory.counters,
        drawn: drawn_by(&inventory.counters, taken)?,
        constraints: &constraints,
        budget: SEARCH_BUDGET,
        chosen: Vec::new(),
        used: HashSet::new(),
    };
    if !search.requests(&alternatives, 0)? {
        // Upstream names invalid pools only when nothing else could be allocated either.
        if !inventory.invalid.is_empty() {
            return Err(INVALID_POOLS.to_string());
        }
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
            let device = &devices[*device];
            if device.shareable {
                let consumed = consumable::consumed(&want.capacity, &device.capacity);
                result["shareID"] = json!(uuid::Uuid::new_v4().to_string());
                if !consumed.is_empty() {
                    result["consumedCapacity"] = consumed
                        .iter()
                        .map(|(name, amount)| (name.clone(), json!(amount.canonical())))
                        .collect::<Map<String, Value>>()
                        .into();
                }
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
    if let Some(selector) = node_selector(chosen.iter().map(|(_, d)| &devices[*d].placement), node)
    {
        allocation["nodeSelector"] = selector;
    }
    Ok(allocation)
}

/// The node selector of an allocation of devices with `placements` on `node`: the node
/// itself when one is local to it, else the requirements of the devices' node selectors in
/// one term, else none (upstream's `createNodeSelector`).
fn node_selector<'a>(
    placements: impl Iterator<Item = &'a Placement> + Clone,
    node: &str,
) -> Option<Value> {
    if placements.clone().any(|p| *p == Placement::Node) {
        return Some(json!({"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}));
    }
    let mut term = Map::new();
    for placement in placements {
        let Placement::Selected(selected) = placement else {
            continue;
        };
        for key in ["matchExpressions", "matchFields"] {
            for requirement in selected[key].as_array().into_iter().flatten() {
                let list = term.entry(key).or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(list) = list
                    && !list.contains(requirement)
                {
                    list.push(requirement.clone());
                }
            }
        }
    }
    (!term.is_empty()).then(|| json!({"nodeSelectorTerms": [term]}))
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
        capacity: consumable::requested(body),
        matching: Vec::new(),
    })
}

/// Per pool, what devices draw on each `(counter set, counter)`.
type Drawn = BTreeMap<(String, String), BTreeMap<(String, String), Quantity>>;

/// What the devices `taken` by other allocations draw on the pools' `counters` (upstream's
/// available counters, kept as the draws on them rather than what is left).
fn drawn_by(
    counters: &BTreeMap<(String, String), PoolCounters>,
    taken: &HashSet<(String, String, String)>,
) -> Result<Drawn, String> {
    let mut drawn = Drawn::new();
    for ((driver, pool), pool_counters) in counters {
        let mut sums = BTreeMap::new();
        for (device, draws) in &pool_counters.draws {
            if taken.contains(&(driver.clone(), pool.clone(), device.clone())) {
                add_draws(&mut sums, draws)?;
            }
        }
        drawn.insert((driver.clone(), pool.clone()), sums);
    }
    Ok(drawn)
}

/// Adds `draws` to the per-counter `sums`.
fn add_draws(
    sums: &mut BTreeMap<(String, String), Quantity>,
    draws: &[Draw],
) -> Result<(), String> {
    for draw in draws {
        let key = (draw.set.clone(), draw.counter.clone());
        let sum = match sums.get(&key) {
            Some(sum) => sum.checked_add(&draw.amount).ok_or_else(|| {
                format!(
                    "counter {} of counter set {}: sum out of range",
                    draw.counter, draw.set
                )
            })?,
            None => draw.amount.clone(),
        };
        sums.insert(key, sum);
    }
    Ok(())
}

/// The backtracking search's state.
struct Search<'a> {
    devices: &'a [Device],
    taken: &'a HashSet<(String, String, String)>,
    /// What other allocations consume of shared devices.
    consumed: &'a HashMap<DeviceId, Amounts>,
    /// The pools' shared counters.
    counters: &'a BTreeMap<(String, String), PoolCounters>,
    /// What the devices of other allocations draw on them.
    drawn: Drawn,
    constraints: &'a [(Vec<String>, String)],
    budget: usize,
    /// Devices chosen so far, with the want they satisfy.
    chosen: Vec<(&'a Want, usize)>,
    /// Indexes of chosen devices that are not shared (no such device twice in one claim).
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
                    // All: every matching device with the capacity asked for, all of them
                    // free.
                    let matching: Vec<usize> = want
                        .matching
                        .iter()
                        .copied()
                        .filter(|d| self.capacity_allows(want, *d))
                        .collect();
                    let free = candidates.iter().filter(|d| matching.contains(d)).count();
                    if matching.is_empty() || matching.len() != free {
                        continue;
                    }
                    let mark = self.chosen.len();
                    let mut all_taken = true;
                    for &d in &matching {
                        if !self.take(want, d)? {
                            all_taken = false;
                            break;
                        }
                    }
                    if all_taken && self.requests(alternatives, i + 1)? {
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
            if self.take(want, d)? && self.pick(want, candidates, k + 1, n - 1, alternatives, i)? {
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

    /// Takes device `d` for `want` if its capacities, its pool's shared counters and the
    /// constraints allow it.
    fn take(&mut self, want: &'a Want, d: usize) -> Result<bool, String> {
        if self.used.contains(&d) {
            return Ok(false);
        }
        if !self.capacity_allows(want, d) || !self.counters_allow(d)? {
            return Ok(false);
        }
        for (requests, attribute) in self.constraints {
            let applies =
                |request: &str| requests.is_empty() || requests.iter().any(|r| r == request);
            if !applies(&want.request) {
                continue;
            }
            let Some(value) = attribute_of(&self.devices[d], attribute) else {
                return Ok(false); // a constrained device must have the attribute
            };
            let conflict = self.chosen.iter().any(|(w, other)| {
                applies(&w.request)
                    && attribute_of(&self.devices[*other], attribute) != Some(value.clone())
            });
            if conflict {
                return Ok(false);
            }
        }
        if !self.devices[d].shareable {
            self.used.insert(d);
        }
        self.chosen.push((want, d));
        Ok(true)
    }

    /// Whether device `d` has the capacity `want` asks for, beyond what other allocations and
    /// this one's earlier picks of it consume.
    fn capacity_allows(&self, want: &Want, d: usize) -> bool {
        let device = &self.devices[d];
        let mut allocating = Amounts::new();
        if device.shareable {
            for (other_want, other) in &self.chosen {
                if *other == d {
                    consumable::add(
                        &mut allocating,
                        &consumable::consumed(&other_want.capacity, &device.capacity),
                    );
                }
            }
        }
        let in_use = device
            .shareable
            .then(|| self.consumed.get(&device.id()))
            .flatten();
        consumable::fits(&want.capacity, &device.capacity, in_use, &allocating)
    }

    /// Whether device `d` draws on its pool's counters when picked: it draws on some, and is
    /// not a device allowing multiple allocations that another allocation holds already
    /// (upstream skips the counter check for those: their draw is counted once).
    fn draws_when_picked(&self, d: usize) -> bool {
        let device = &self.devices[d];
        if device.draws.is_empty() {
            return false;
        }
        !(device.shareable && self.taken.contains(&device.id()))
    }

    /// Whether the shared device `d` is among this allocation's picks already (its draws
    /// are then counted).
    fn picked(&self, d: usize) -> bool {
        self.chosen.iter().any(|(_, other)| *other == d)
    }

    /// Whether the shared counters of device `d`'s pool can take its draws on top of those of
    /// the other allocations and of the devices picked so far (upstream's
    /// `checkAvailableCounters`: every counter of the pool is checked, so an overdrawn
    /// counter keeps all the pool's drawing devices out). Backtracking drops a pick from
    /// `chosen`, which gives its draws back.
    fn counters_allow(&self, d: usize) -> Result<bool, String> {
        if !self.draws_when_picked(d) || (self.devices[d].shareable && self.picked(d)) {
            return Ok(true);
        }
        let device = &self.devices[d];
        let pool = (device.driver.clone(), device.pool.clone());
        let Some(pool_counters) = self.counters.get(&pool) else {
            return Ok(false); // draws on counters its pool does not publish
        };
        let mut sums = self.drawn.get(&pool).cloned().unwrap_or_default();
        let mut counted = HashSet::new();
        for &(_, other) in &self.chosen {
            let picked = &self.devices[other];
            if picked.driver == device.driver
                && picked.pool == device.pool
                && self.draws_when_picked(other)
                && counted.insert(other)
            {
                add_draws(&mut sums, &picked.draws)?;
            }
        }
        add_draws(&mut sums, &device.draws)?;
        for (set, counters) in &pool_counters.sets {
            for (counter, value) in counters {
                if sums
                    .get(&(set.clone(), counter.clone()))
                    .is_some_and(|sum| sum.cmp(value).is_gt())
                {
                    return Ok(false);
                }
            }
        }
        Ok(true)
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

    /// What other allocations hold when they hold `devices` (no shared ones).
    fn held<const N: usize>(devices: [DeviceId; N]) -> InUse {
        InUse {
            devices: HashSet::from(devices),
            consumed: HashMap::new(),
        }
    }

    const NODE: &str = "korral-node";

    /// The simulated Node.
    fn node() -> Value {
        json!({"metadata": {"name": NODE, "labels": {"zone": "a"}}})
    }

    fn slice(name: &str, driver: &str, devices: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": {"driver": driver, "nodeName": NODE,
            "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1}, "devices": devices}})
    }

    fn gpus() -> Inventory {
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
            &node(),
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
        let found = devices_on(&[old, new, partial, elsewhere, everywhere], &node());
        let ids: Vec<(String, bool)> = found
            .devices
            .iter()
            .map(|d| (d.name.clone(), d.placement == Placement::Node))
            .collect();
        assert_eq!(ids, [("x2".to_string(), true), ("w".to_string(), false)]);
    }

    #[test]
    fn exact_count_all_and_selectors() {
        let one = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 't4'"}}]}}]));
        let got = allocate(&one, &classes(), &gpus(), &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-2"]);
        assert_eq!(got["devices"]["config"][0]["source"], "FromClass");
        assert_eq!(got["devices"]["config"][0]["requests"], json!(["g"]));
        assert_eq!(
            got["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"],
            json!([NODE])
        );

        let two = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 2}}]));
        let got = allocate(&two, &classes(), &gpus(), &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-0", "g=gpu-1"]);

        let all = claim(
            json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]),
        );
        let got = allocate(&all, &classes(), &gpus(), &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got).len(), 3);
        // All needs every matching device free.
        let taken = held([(
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
            &node(),
        );
        let big = claim(
            json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 2,
            "selectors": [{"cel": {"expression":
                "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"}}]}}]),
        );
        let got = allocate(&big, &classes(), &devices, &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-0", "g=gpu-3"]);
        let newer = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression":
                "device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.9.0'))"}}]}}]));
        let got =
            allocate(&newer, &classes(), &devices, &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-3"]);
    }

    #[test]
    fn constraints_backtrack_and_first_available_falls_back() {
        // Two devices on one NUMA node: gpu-0 alone on numa 0, so gpu-1 and gpu-2 are chosen.
        let same_numa = json!({"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 2}}],
            "constraints": [{"matchAttribute": "gpu.example.com/numa"}]}});
        let got =
            allocate(&same_numa, &classes(), &gpus(), &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=gpu-1", "g=gpu-2"]);
        // firstAvailable: no h100, so the a100 subrequest.
        let first = claim(json!([{"name": "g", "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'h100'"}}]},
            {"name": "small", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'a100'"}}]}]}]));
        let got =
            allocate(&first, &classes(), &gpus(), &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g/small=gpu-0"]);
        assert_eq!(got["devices"]["config"][0]["requests"], json!(["g/small"]));
    }

    #[test]
    fn failures_say_why() {
        let four = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 4}}]));
        assert_eq!(
            allocate(&four, &classes(), &gpus(), &InUse::default(), NODE),
            Err("cannot allocate all claims".to_string())
        );
        let no_class = claim(json!([{"name": "g", "exactly": {"deviceClassName": "nope"}}]));
        assert_eq!(
            allocate(&no_class, &classes(), &gpus(), &InUse::default(), NODE),
            Err("request g: device class nope does not exist".to_string())
        );
        let missing = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].nothing == 1"}}]}}]));
        let err =
            allocate(&missing, &classes(), &gpus(), &InUse::default(), NODE).expect_err("fails");
        assert!(err.contains("CEL runtime error"), "{err}");
    }

    #[test]
    fn taints_need_tolerations_and_admin_access_shares() {
        let mut devices = gpus();
        devices.devices.truncate(1);
        devices.devices[0].taints = vec![json!({"key": "broken", "effect": "NoSchedule"})];
        let plain = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu"}}]));
        assert!(allocate(&plain, &classes(), &devices, &InUse::default(), NODE).is_err());
        let tolerating = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "tolerations": [{"key": "broken", "operator": "Exists"}]}}]));
        assert!(allocate(&tolerating, &classes(), &devices, &InUse::default(), NODE).is_ok());
        devices.devices[0].taints.clear();
        let taken = held([devices.devices[0].id()]);
        assert!(allocate(&plain, &classes(), &devices, &taken, NODE).is_err());
        let admin = claim(
            json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "adminAccess": true}}]),
        );
        let got = allocate(&admin, &classes(), &devices, &taken, NODE).expect("allocates");
        assert_eq!(got["devices"]["results"][0]["adminAccess"], true);
    }

    /// A pool `gpu.example.com/korral-node` of two slices: the counter sets (`gpu-0`, 40Gi
    /// of memory, and `gpu-1`, 40Gi) in a slice naming another node, and `devices` drawing
    /// on them in a slice on the node.
    fn partitioned(devices: Value) -> Vec<Value> {
        let pool = json!({"name": NODE, "generation": 1, "resourceSliceCount": 2});
        vec![
            json!({"metadata": {"name": "counters"}, "spec": {"driver": "gpu.example.com",
                "nodeName": "elsewhere", "pool": pool, "sharedCounters": [
                    {"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}},
                    {"name": "gpu-1", "counters": {"memory": {"value": "40960Mi"}}}]}}),
            json!({"metadata": {"name": "devices"}, "spec": {"driver": "gpu.example.com",
                "nodeName": NODE, "pool": pool, "devices": devices}}),
        ]
    }

    /// A device drawing `memory` on counter set `set`, its name in its `id` attribute.
    fn partition(name: &str, set: &str, memory: &str) -> Value {
        json!({"name": name, "attributes": {"id": {"string": name}},
            "consumesCounters": [{"counterSet": set,
            "counters": {"memory": {"value": memory}}}]})
    }

    /// The whole first GPU, its two halves, and the whole second GPU.
    fn halves() -> Inventory {
        devices_on(
            &partitioned(json!([
                partition("whole", "gpu-0", "40Gi"),
                partition("half-a", "gpu-0", "20Gi"),
                partition("half-b", "gpu-0", "20480Mi"),
                partition("other", "gpu-1", "40Gi"),
            ])),
            &node(),
        )
    }

    fn id(device: &str) -> (String, String, String) {
        (
            "gpu.example.com".to_string(),
            NODE.to_string(),
            device.to_string(),
        )
    }

    #[test]
    fn counters_exhausted_by_a_pick_move_to_the_next_device() {
        let inventory = halves();
        // The counter sets come from a slice naming another node; the draws are parsed.
        assert_eq!(inventory.devices.len(), 4);
        assert_eq!(inventory.devices[1].draws[0].set, "gpu-0");
        let two = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 2}}]));
        let got =
            allocate(&two, &classes(), &inventory, &InUse::default(), NODE).expect("allocates");
        // The whole first GPU leaves nothing of its memory to its halves.
        assert_eq!(names(&got), ["g=whole", "g=other"]);
        let three =
            claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 3}}]));
        let got =
            allocate(&three, &classes(), &inventory, &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=half-a", "g=half-b", "g=other"]);
        let four = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 4}}]));
        assert_eq!(
            allocate(&four, &classes(), &inventory, &InUse::default(), NODE),
            Err(CANNOT_ALLOCATE.to_string())
        );
        // All: every matching device, whose draws together exceed the counters.
        let all = claim(
            json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]),
        );
        assert_eq!(
            allocate(&all, &classes(), &inventory, &InUse::default(), NODE),
            Err(CANNOT_ALLOCATE.to_string())
        );
    }

    #[test]
    fn backtracking_gives_counters_back() {
        // The first request takes the whole GPU first; the second then finds no half with
        // memory left, so the search goes back and gives the whole GPU's memory back.
        let spec = claim(json!([
            {"name": "any", "exactly": {"deviceClassName": "gpu"}},
            {"name": "half", "exactly": {"deviceClassName": "gpu",
                "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].id.startsWith('half')"}}]}}]));
        let got =
            allocate(&spec, &classes(), &halves(), &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got), ["any=half-a", "half=half-b"]);
        // firstAvailable falls back the same way.
        let spec = claim(json!([
            {"name": "gpu", "firstAvailable": [
                {"name": "two-halves", "deviceClassName": "gpu", "count": 2,
                    "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].id != 'half-b'"}}]},
                {"name": "one", "deviceClassName": "gpu"}]},
            {"name": "more", "exactly": {"deviceClassName": "gpu", "count": 2}}]));
        let got =
            allocate(&spec, &classes(), &halves(), &InUse::default(), NODE).expect("allocates");
        // two-halves: whole + other leave no memory to `more`, half-a + other leave only
        // half-b; `one`: whole leaves only other; half-a leaves half-b and other.
        assert_eq!(names(&got), ["gpu/one=half-a", "more=half-b", "more=other"]);
    }

    #[test]
    fn devices_of_other_allocations_draw_on_the_counters() {
        // A half held by another claim, on another node's slice of the same pool.
        let mut slices = partitioned(json!([
            partition("whole", "gpu-0", "40Gi"),
            partition("half-b", "gpu-0", "20Gi"),
        ]));
        slices[0]["spec"]["pool"]["resourceSliceCount"] = json!(3);
        slices[1]["spec"]["pool"]["resourceSliceCount"] = json!(3);
        slices.push(json!({"metadata": {"name": "remote"}, "spec": {"driver": "gpu.example.com",
            "nodeName": "elsewhere", "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 3},
            "devices": [partition("half-a", "gpu-0", "20Gi")]}}));
        let inventory = devices_on(&slices, &node());
        let names_on: Vec<&str> = inventory.devices.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names_on, ["whole", "half-b"]);
        let whole = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].id == 'whole'"}}]}}]));
        let taken = held([id("half-a")]);
        assert_eq!(
            allocate(&whole, &classes(), &inventory, &taken, NODE),
            Err(CANNOT_ALLOCATE.to_string())
        );
        let any = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu"}}]));
        let got = allocate(&any, &classes(), &inventory, &taken, NODE).expect("allocates");
        assert_eq!(names(&got), ["g=half-b"]);
        // Released: the whole GPU is free again.
        let got =
            allocate(&whole, &classes(), &inventory, &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=whole"]);
        // Admin access passes devices in use but not the counters they draw on.
        let admin = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "adminAccess": true, "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].id == 'whole'"}}]}}]));
        assert_eq!(
            allocate(&admin, &classes(), &inventory, &taken, NODE),
            Err(CANNOT_ALLOCATE.to_string())
        );
    }

    #[test]
    fn shared_devices_draw_once() {
        let mut inventory = halves();
        for device in &mut inventory.devices {
            device.shareable = device.name == "whole";
        }
        // Held by another claim and shared: its draw is counted once, so it stays a
        // candidate while the halves do not fit.
        let taken = held([id("whole")]);
        let spec = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].id != 'other'"}}]}}]));
        let got = allocate(&spec, &classes(), &inventory, &taken, NODE).expect("allocates");
        assert_eq!(names(&got), ["g=whole"]);
        let halves_only = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].id.startsWith('half')"}}]}}]));
        assert!(allocate(&halves_only, &classes(), &inventory, &taken, NODE).is_err());
    }

    #[test]
    fn pools_with_and_without_counters_and_invalid_pools() {
        let mut slices = partitioned(json!([
            partition("whole", "gpu-0", "40Gi"),
            partition("half-a", "gpu-0", "20Gi"),
        ]));
        // A plain pool of another driver, and a pool drawing on counters it does not have.
        slices.push(slice(
            "plain",
            "gpu.example.com",
            json!([{"name": "plain-0"}]),
        ));
        slices[2]["spec"]["pool"]["name"] = json!("plain");
        let mut broken = slice(
            "broken",
            "gpu.example.com",
            json!([partition("bad", "missing", "1")]),
        );
        broken["spec"]["pool"]["name"] = json!("broken");
        slices.push(broken);
        let mut unknown = partitioned(json!([partition("odd", "gpu-0", "1")]));
        for s in &mut unknown {
            s["spec"]["pool"]["name"] = json!("unknown");
            s["metadata"]["name"] = json!(format!("unknown-{}", s["metadata"]["name"]));
        }
        unknown[1]["spec"]["devices"][0]["consumesCounters"][0]["counters"] =
            json!({"cores": {"value": "1"}});
        slices.extend(unknown);
        let mut twice = partitioned(json!([{"name": "dup"}]));
        for s in &mut twice {
            s["spec"]["pool"]["name"] = json!("twice");
        }
        twice[1]["spec"]
            .as_object_mut()
            .expect("spec")
            .remove("devices");
        twice[1]["spec"]["sharedCounters"] = json!([{"name": "gpu-0", "counters": {}}]);
        slices.extend(twice);
        let inventory = devices_on(&slices, &node());
        let found: Vec<&str> = inventory.devices.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(found, ["whole", "half-a", "plain-0"]);
        assert_eq!(
            inventory.invalid,
            [
                (
                    "gpu.example.com/broken".to_string(),
                    "counter set missing not found".to_string()
                ),
                (
                    "gpu.example.com/twice".to_string(),
                    "duplicate counter set name gpu-0".to_string()
                ),
                (
                    "gpu.example.com/unknown".to_string(),
                    "counter cores not found in counter set gpu-0".to_string()
                ),
            ]
        );
        assert_eq!(inventory.counters.len(), 1);
        let two = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 2}}]));
        let got =
            allocate(&two, &classes(), &inventory, &InUse::default(), NODE).expect("allocates");
        assert_eq!(names(&got), ["g=whole", "g=plain-0"]);
        // Not enough: upstream then names the invalid pools.
        let three =
            claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 3}}]));
        assert_eq!(
            allocate(&three, &classes(), &inventory, &InUse::default(), NODE),
            Err(INVALID_POOLS.to_string())
        );
        let all = claim(
            json!([{"name": "g", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]),
        );
        assert_eq!(
            allocate(&all, &classes(), &inventory, &InUse::default(), NODE),
            Err("request g: asks for all devices, but resource pool gpu.example.com/broken is currently invalid".to_string())
        );
    }

    /// One GPU shared by claims: 8Gi of memory in steps of 1Gi (1Gi by default), and a
    /// second, unshared, GPU of 16Gi.
    fn shared_gpu() -> Inventory {
        devices_on(
            &[slice(
                "s",
                "gpu.example.com",
                json!([
                    {"name": "shared", "allowMultipleAllocations": true, "capacity": {"memory": {"value": "8Gi",
                        "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}}},
                    {"name": "whole", "capacity": {"memory": {"value": "16Gi"}}},
                ]),
            )],
            &node(),
        )
    }

    fn memory(name: &str, amount: &str) -> Value {
        json!({"name": name, "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": "device.allowMultipleAllocations"}}],
            "capacity": {"requests": {"memory": amount}}}})
    }

    #[test]
    fn shared_devices_are_allocated_while_their_capacity_lasts() {
        let inventory = shared_gpu();
        let mut in_use = InUse::default();
        // 2.5Gi rounds up to 3Gi: recorded with a share id.
        let first = allocate(
            &claim(json!([memory("a", "2.5Gi")])),
            &classes(),
            &inventory,
            &in_use,
            NODE,
        )
        .expect("allocates");
        let result = &first["devices"]["results"][0];
        assert_eq!(result["device"], "shared");
        assert_eq!(result["consumedCapacity"], json!({"memory": "3Gi"}));
        let share = result["shareID"].as_str().expect("a share id");
        assert!(uuid::Uuid::parse_str(share).is_ok(), "{share}");
        in_use.record(result);
        // 6Gi more would exceed 8Gi; 5Gi fits.
        assert_eq!(
            allocate(
                &claim(json!([memory("b", "6Gi")])),
                &classes(),
                &inventory,
                &in_use,
                NODE
            ),
            Err(CANNOT_ALLOCATE.to_string())
        );
        let second = allocate(
            &claim(json!([memory("b", "5Gi")])),
            &classes(),
            &inventory,
            &in_use,
            NODE,
        )
        .expect("allocates");
        assert_ne!(
            second["devices"]["results"][0]["shareID"],
            result["shareID"]
        );
        // Two requests of one claim share the device (each with its own share); one request
        // for two devices cannot take it twice.
        let fresh = InUse::default();
        let both = allocate(
            &claim(json!([memory("x", "4Gi"), memory("y", "4Gi")])),
            &classes(),
            &inventory,
            &fresh,
            NODE,
        )
        .expect("allocates");
        assert_eq!(names(&both), ["x=shared", "y=shared"]);
        let mut twice = memory("z", "1Gi");
        twice["exactly"]["count"] = json!(2);
        assert_eq!(
            allocate(&claim(json!([twice])), &classes(), &inventory, &fresh, NODE),
            Err(CANNOT_ALLOCATE.to_string())
        );
        // Capacity requests select among unshared devices too: 12Gi only fits the 16Gi one.
        let big = json!([{"name": "big", "exactly": {"deviceClassName": "gpu",
            "capacity": {"requests": {"memory": "12Gi"}}}}]);
        let got = allocate(&claim(big), &classes(), &inventory, &fresh, NODE).expect("allocates");
        assert_eq!(names(&got), ["big=whole"]);
        assert!(got["devices"]["results"][0].get("shareID").is_none());
        // A capacity no device has.
        let odd = json!([{"name": "odd", "exactly": {"deviceClassName": "gpu",
            "capacity": {"requests": {"cores": "1"}}}}]);
        assert!(allocate(&claim(odd), &classes(), &inventory, &fresh, NODE).is_err());
    }

    #[test]
    fn slices_selected_by_node_selectors_and_pools_that_cannot_be_used() {
        let zone = |z: &str| {
            json!({"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": [z]}]}]})
        };
        let selected = |name: &str, pool: &str, z: &str, devices: Value| {
            json!({"metadata": {"name": name}, "spec": {"driver": "gpu.example.com",
                "nodeSelector": zone(z),
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1}, "devices": devices}})
        };
        // A slice for the node's zone is on it; one for another zone is not.
        let inventory = devices_on(
            &[
                selected("here", "zone-a", "a", json!([{"name": "net-0"}])),
                selected("there", "zone-b", "b", json!([{"name": "net-1"}])),
            ],
            &node(),
        );
        let got = allocate(
            &claim(json!([{"name": "net", "exactly": {"deviceClassName": "gpu"}}])),
            &classes(),
            &inventory,
            &InUse::default(),
            NODE,
        )
        .expect("allocates");
        assert_eq!(names(&got), ["net=net-0"]);
        // The allocation is restricted to the selector's nodes, not to this one.
        assert_eq!(got["nodeSelector"], zone("a"));
        // Two devices of one name in one pool: the pool is invalid.
        let mut second = slice("s2", "gpu.example.com", json!([{"name": "gpu-0"}]));
        second["spec"]["pool"]["resourceSliceCount"] = json!(2);
        let mut first = slice("s1", "gpu.example.com", json!([{"name": "gpu-0"}]));
        first["spec"]["pool"]["resourceSliceCount"] = json!(2);
        let inventory = devices_on(&[first.clone(), second], &node());
        assert!(inventory.devices.is_empty());
        assert_eq!(
            inventory.invalid,
            [(
                format!("gpu.example.com/{NODE}"),
                "duplicate device name gpu-0".to_string()
            )]
        );
        // A pool whose second slice is not published yet: no device, and "All" refused.
        let inventory = devices_on(&[first], &node());
        assert!(inventory.devices.is_empty());
        let all = claim(
            json!([{"name": "every", "exactly": {"deviceClassName": "gpu",
            "allocationMode": "All"}}]),
        );
        assert_eq!(
            allocate(&all, &classes(), &inventory, &InUse::default(), NODE),
            Err(format!(
                "request every: asks for all devices, but resource pool gpu.example.com/{NODE} is currently being updated"
            ))
        );
    }
}
