use std::collections::BTreeMap;

use super::*;
use crate::scenario::{FaultKind, RestartMode};

const K8S: &str = r#"kind: exec
name: helm
vars: { ns: pulsar }
zookeepers: [pulsar-zookeeper-0]
broker_restart:
  kill: "kubectl -n {ns} delete pod {node} --grace-period=0 --force"
  ready: "kubectl -n {ns} wait --for=condition=Ready pod/{node} --timeout=5s"
pause:
  inject: "kubectl -n {ns} exec {node} -- kill -STOP 1"
  heal: "kubectl -n {ns} exec {node} -- kill -CONT 1"
packet_loss:
  inject: "kubectl -n {ns} exec {node} -- tc qdisc add dev eth0 root netem loss {percent}%"
  heal: "kubectl -n {ns} exec {node} -- tc qdisc del dev eth0 root"
"#;

fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_kubernetes_adapter_fills_its_commands() {
    let a = parse("k8s.yaml", K8S).unwrap();
    assert_eq!(a.name, "helm");
    assert_eq!(a.shell, vec!["sh", "-c"]);
    let kill = FaultKind::BrokerRestart {
        mode: RestartMode::Kill,
        down_for: std::time::Duration::from_secs(3),
    };
    let c = a.commands(&kill, NodeRole::Broker).unwrap();
    assert!(c.heal.is_none(), "a StatefulSet starts the pod again");
    let mut v = values(&[("node", "pulsar-broker-1")]);
    v.extend(a.vars.clone());
    assert_eq!(
        c.inject.render(&v),
        "kubectl -n pulsar delete pod pulsar-broker-1 --grace-period=0 --force"
    );
    let loss = FaultKind::PacketLoss {
        percent: 30,
        duration: std::time::Duration::from_secs(5),
    };
    let c = a.commands(&loss, NodeRole::Broker).unwrap();
    v.insert("percent".into(), "30".into());
    assert_eq!(
        c.inject.render(&v),
        "kubectl -n pulsar exec pulsar-broker-1 -- tc qdisc add dev eth0 root netem loss 30%"
    );
    assert_eq!(
        c.heal.unwrap().render(&v),
        "kubectl -n pulsar exec pulsar-broker-1 -- tc qdisc del dev eth0 root"
    );
    // A graceful restart needs `stop`, which this adapter lacks; bookies have nothing.
    let graceful = FaultKind::BrokerRestart {
        mode: RestartMode::Graceful,
        down_for: std::time::Duration::from_secs(3),
    };
    let e = a.commands(&graceful, NodeRole::Broker).unwrap_err();
    assert!(e.contains("`stop` (mode: graceful)"), "{e}");
    let bookie = FaultKind::BookieRestart {
        mode: RestartMode::Kill,
        down_for: std::time::Duration::from_secs(3),
    };
    let e = a.commands(&bookie, NodeRole::Bookie).unwrap_err();
    assert!(e.contains("no `bookie_restart`"), "{e}");
}

#[test]
fn values_that_a_shell_would_read_are_quoted() {
    let t = Template::check("docker kill {node} && echo {{done}}", &[], &[]).unwrap();
    assert_eq!(
        t.render(&values(&[("node", "b-1; rm -rf /")])),
        "docker kill 'b-1; rm -rf /' && echo {done}"
    );
    assert_eq!(
        t.render(&values(&[("node", "it's")])),
        r"docker kill 'it'\''s' && echo {done}"
    );
    assert_eq!(t.render(&values(&[])), "docker kill <node> && echo {done}");
    assert_eq!(shell_quote("10.0.0.5:8080"), "10.0.0.5:8080");
    assert_eq!(shell_quote(""), "''");
}

#[test]
fn unknown_placeholders_and_keys_are_refused_with_their_place() {
    let e = parse(
        "a.yaml",
        "kind: exec\npause:\n  inject: \"docker pause {nod}\"\n  heal: \"docker unpause {node}\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("a.yaml:3:"), "{e}");
    assert!(e.contains("unknown placeholder {nod}"), "{e}");
    // {percent} belongs to packet loss only.
    let e = parse(
        "a.yaml",
        "kind: exec\npause:\n  inject: \"x {percent}\"\n  heal: \"y\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("pause.inject"), "{e}");
    let e = parse("a.yaml", "kind: exec\npauses: {}\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("a.yaml:2:"), "{e}");
    assert!(e.contains("unknown field `pauses`"), "{e}");
    let e = parse("a.yaml", "kind: exec\nbroker_restart: { start: \"x\" }\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("give `kill`"), "{e}");
    let e = parse(
        "a.yaml",
        "kind: exec\npause: { inject: \"{\", heal: \"x\" }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("unclosed"), "{e}");
    let e = parse(
        "a.yaml",
        "kind: exec\npause: { inject: \"docker pause ${node}\", heal: \"x\" }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("expanded by the shell"), "{e}");
    let e = parse("a.yaml", "kind: exec\nvars: { node: x }\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be a variable"), "{e}");
}

#[test]
fn node_names_come_from_the_map_or_the_host() {
    let a = parse(
        "a.yaml",
        "kind: exec\nnodes: { \"10.1.0.7\": pc-broker-2, \"h:8080\": special }\n",
    )
    .unwrap();
    assert_eq!(a.node_name("10.1.0.7:8080"), "pc-broker-2");
    assert_eq!(a.node_name("h:8080"), "special");
    assert_eq!(
        a.node_name("pulsar-broker-0.pulsar-broker.pulsar.svc.cluster.local:8080"),
        "pulsar-broker-0"
    );
    assert_eq!(a.node_name("10.9.9.9:3181"), "10.9.9.9");
    assert_eq!(host_of("pulsar://10.1.0.7:6650"), "10.1.0.7");
    assert_eq!(host_of("http://b:8080/"), "b");
    assert_eq!(host_of("[::1]:8080"), "::1");
}

#[test]
fn an_adapter_is_checked_against_the_scenario() {
    let s = crate::scenario::parse(
        "s.yaml",
        "name: x\ncluster: { service_url: \"pulsar://h:6650\", admin_url: \"http://h:8080\", brokers: 3, bookies: 2 }\nworkload: { topic: \"persistent://public/default/x\", messages: 10 }\nfaults:\n  - kind: broker_restart\n    mode: kill\n    schedule: { at: [1s] }\n  - kind: topic_unload\n    schedule: { at: [2s] }\n  - kind: bookie_restart\n    mode: kill\n    schedule: { at: [3s] }\n",
    )
    .unwrap();
    assert_eq!(s.cluster.counts(), (3, 2, 1));
    let a = parse("k8s.yaml", K8S).unwrap();
    let e = a.check(&s).unwrap_err();
    assert!(e.contains("bookie_restart-2"), "{e}");
    assert!(e.contains("no `bookie_restart`"), "{e}");
    assert!(is_destructive(&s.faults[0].kind));
    assert!(!is_destructive(&s.faults[1].kind));
}

#[test]
fn the_bundled_example_adapters_parse_and_cover_the_example_scenario() {
    let k8s = parse(
        "examples/kubernetes/adapter.yaml",
        include_str!("../../../../examples/kubernetes/adapter.yaml"),
    )
    .unwrap();
    assert_eq!(k8s.zookeepers.len(), 3);
    let docker = parse(
        "examples/docker/adapter.yaml",
        include_str!("../../../../examples/docker/adapter.yaml"),
    )
    .unwrap();
    let loss = FaultKind::PacketLoss {
        percent: 40,
        duration: std::time::Duration::from_secs(5),
    };
    let mut v = values(&[("node", "pc-1-broker-2")]);
    v.extend(docker.vars.clone());
    v.insert("percent".into(), "40".into());
    let inject = docker
        .commands(&loss, NodeRole::Broker)
        .unwrap()
        .inject
        .render(&v);
    assert!(
        inject.contains("'{ type filter hook output priority -150; policy accept; }'"),
        "{inject}"
    );
    assert!(
        inject.contains("numgen random mod 100 '<' 40 drop\""),
        "{inject}"
    );
    let s = crate::scenario::parse(
        "examples/kubernetes/restarts.yaml",
        include_str!("../../../../examples/kubernetes/restarts.yaml"),
    )
    .unwrap();
    assert!(s.allow_destructive);
    k8s.check(&s).unwrap();
    docker.check(&s).unwrap();
}
