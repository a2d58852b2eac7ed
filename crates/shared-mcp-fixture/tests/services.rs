//! The throwaway servers: PostgreSQL logs in only with its password, stops as a crash would
//! and starts again keeping what was committed, and leaves nothing behind; nginx spreads
//! requests round robin over its upstreams and moves on from one that is gone.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

use shared_mcp_fixture::services::{Balancer, Postgres};

#[test]
fn postgres_keeps_what_was_committed_across_an_immediate_stop() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    assert!(
        postgres
            .dsn()
            .contains(&format!(":{}/postgres", postgres.port()))
    );
    postgres.psql("CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)");
    postgres.stop();
    let refused = std::panic::catch_unwind(|| postgres.psql("SELECT 1"));
    assert!(refused.is_err(), "a stopped server answers nothing");
    postgres.start_again();
    assert_eq!(postgres.psql("SELECT n FROM kept").trim(), "7");
    let wrong = std::process::Command::new("psql")
        .args(["-X", "-h", "127.0.0.1", "-p", &postgres.port().to_string()])
        .args(["-U", "runvil", "-d", "postgres", "-c", "SELECT 1"])
        .env("PGPASSWORD", "not-the-password")
        .output();
    if let Ok(wrong) = wrong {
        assert!(!wrong.status.success(), "a wrong password is refused");
    }
}

#[test]
fn postgres_is_stopped_and_removed_when_dropped() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let port = postgres.port();
    drop(postgres);
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens on its port any more"
    );
}

/// A one-connection-at-a-time HTTP server answering every request with `name`.
fn upstream(name: &'static str) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{name}",
                name.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    addr
}

fn get(balancer: &Balancer) -> String {
    let mut stream = TcpStream::connect(balancer.addr()).expect("connect");
    stream
        .write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    answer
        .rsplit("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn nginx_alternates_between_its_upstreams_and_skips_one_that_is_gone() {
    let gone = TcpListener::bind("127.0.0.1:0").expect("bind");
    let gone_addr = gone.local_addr().expect("addr");
    drop(gone);
    let Some(balancer) = Balancer::start(&[upstream("a"), upstream("b"), gone_addr]) else {
        return;
    };
    let answers: Vec<String> = (0..6).map(|_| get(&balancer)).collect();
    // Every request is answered (the one sent to the upstream that is gone too, by the next
    // one), and both live upstreams answer one client: nothing sticks it to one.
    assert!(answers.iter().all(|a| a == "a" || a == "b"), "{answers:?}");
    for name in ["a", "b"] {
        assert!(
            answers.iter().filter(|a| *a == name).count() >= 2,
            "{answers:?}"
        );
    }
}
