//! A fault-injecting TCP proxy for Kafka connections: it forwards frames both ways and, at
//! random, swallows a Produce response and cuts the connection. The broker has stored that
//! batch (it answers only after the append), but the client never hears so and sends it again,
//! which is how a lost response looks in production.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use logd_storage::SplitMix64;
use parking_lot::Mutex;

/// Kafka's Produce API key.
const PRODUCE: i16 = 0;

/// When to swallow a Produce response.
#[derive(Debug, Clone, Copy)]
pub struct Chaos {
    /// Chance, in parts per thousand, that a Produce response is swallowed.
    pub per_mille: u64,
    /// Stop swallowing after this many, so a run always finishes.
    pub max_drops: u64,
    /// Seed of the proxy's random choices.
    pub seed: u64,
}

/// The running proxy; stops accepting when dropped.
pub struct ChaosProxy {
    /// `host:port` clients connect to.
    pub addr: String,
    dropped: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

struct Shared {
    upstream: String,
    chaos: Chaos,
    rng: Mutex<SplitMix64>,
    dropped: Arc<AtomicU64>,
}

impl ChaosProxy {
    /// Binds a free loopback port, so the broker can advertise it before the proxy forwards.
    pub fn bind() -> TcpListener {
        TcpListener::bind("127.0.0.1:0").expect("bind the proxy")
    }

    /// Forwards connections on `listener` to `upstream` under `chaos`.
    pub fn start(listener: TcpListener, upstream: &str, chaos: Chaos) -> ChaosProxy {
        let addr = listener.local_addr().unwrap().to_string();
        let dropped = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            chaos,
            rng: Mutex::new(SplitMix64::new(chaos.seed)),
            dropped: dropped.clone(),
        });
        let stopping = stop.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopping.load(Ordering::Acquire) {
                    return;
                }
                let Ok(client) = client else { continue };
                let shared = shared.clone();
                std::thread::spawn(move || shared.serve(client));
            }
        });
        ChaosProxy {
            addr,
            dropped,
            stop,
        }
    }

    /// Produce responses swallowed so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Acquire)
    }
}

impl Drop for ChaosProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(&self.addr);
    }
}

/// Reads one size-prefixed frame.
fn read_frame(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).ok()?;
    let size = usize::try_from(i32::from_be_bytes(size)).ok()?;
    let mut frame = vec![0u8; size];
    stream.read_exact(&mut frame).ok()?;
    Some(frame)
}

fn write_frame(stream: &mut TcpStream, frame: &[u8]) -> Option<()> {
    stream.write_all(&(frame.len() as i32).to_be_bytes()).ok()?;
    stream.write_all(frame).ok()
}

impl Shared {
    fn serve(self: Arc<Shared>, client: TcpStream) {
        // The broker may be down (a restart test): the client sees a refused connection.
        let Ok(server) = TcpStream::connect(&self.upstream) else {
            return;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let cut = {
            let (client, server) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let both = Arc::new((client, server));
            move || {
                let _ = both.0.shutdown(Shutdown::Both);
                let _ = both.1.shutdown(Shutdown::Both);
            }
        };
        // Correlation id to API key of the requests in flight on this connection.
        let apis: Arc<Mutex<HashMap<i32, i16>>> = Arc::default();
        let requests = {
            let (mut client, mut server) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let apis = apis.clone();
            let cut = cut.clone();
            std::thread::spawn(move || {
                while let Some(frame) = read_frame(&mut client) {
                    if frame.len() >= 8 {
                        let api = i16::from_be_bytes([frame[0], frame[1]]);
                        let correlation = i32::from_be_bytes(frame[4..8].try_into().unwrap());
                        apis.lock().insert(correlation, api);
                    }
                    if write_frame(&mut server, &frame).is_none() {
                        break;
                    }
                }
                cut();
            })
        };
        let (mut client, mut server) = (client, server);
        while let Some(frame) = read_frame(&mut server) {
            let correlation = frame
                .get(0..4)
                .map(|b| i32::from_be_bytes(b.try_into().unwrap()));
            let api = correlation.and_then(|c| apis.lock().remove(&c));
            if api == Some(PRODUCE) && self.should_drop() {
                break;
            }
            if write_frame(&mut client, &frame).is_none() {
                break;
            }
        }
        cut();
        let _ = requests.join();
    }

    fn should_drop(&self) -> bool {
        let mut rng = self.rng.lock();
        if rng.below(1000) >= self.chaos.per_mille {
            return false;
        }
        self.dropped
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.chaos.max_drops).then_some(n + 1)
            })
            .is_ok()
    }
}
