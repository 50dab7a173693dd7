//! The walk against hand-made bodies, and every served API's decoder against random ones.

use super::*;

#[test]
fn a_huge_array_count_is_refused_without_allocating() {
    let body = i32::MAX.to_be_bytes();
    assert_eq!(
        check(ApiKey::Metadata, 1, &body),
        Err("array count exceeds the request size")
    );
    let mut nested = Vec::new();
    nested.extend_from_slice(&(-1i16).to_be_bytes()); // transactional id
    nested.extend_from_slice(&1i16.to_be_bytes()); // acks
    nested.extend_from_slice(&1000i32.to_be_bytes()); // timeout
    nested.extend_from_slice(&1i32.to_be_bytes()); // one topic
    nested.extend_from_slice(&1i16.to_be_bytes());
    nested.push(b't');
    nested.extend_from_slice(&(i32::MAX - 1).to_be_bytes()); // its partitions: a lie
    assert!(check(ApiKey::Produce, 7, &nested).is_err());
}

#[test]
fn every_served_request_has_a_layout() {
    for (key, min, max) in crate::versions::SUPPORTED {
        if *key == ApiKey::ApiVersions {
            continue; // no arrays, and its v3 request is flexible
        }
        for version in *min..=*max {
            assert!(
                layout(*key, version).is_some(),
                "{key:?} v{version} would reach the codec unchecked"
            );
        }
    }
}

#[test]
fn flexible_layouts_check_compact_counts_and_tagged_fields() {
    use kafka_protocol::messages::DescribeProducersRequest;
    use kafka_protocol::messages::describe_producers_request::TopicRequest;
    use kafka_protocol::protocol::{Encodable, StrBytes};
    // An honest request, as kafka-protocol encodes it, passes.
    let mut topic = TopicRequest::default();
    topic.name = kafka_protocol::messages::TopicName(StrBytes::from_static_str("t"));
    topic.partition_indexes = vec![0, 1, 2];
    let mut request = DescribeProducersRequest::default();
    request.topics = vec![topic];
    let mut honest = bytes::BytesMut::new();
    request.encode(&mut honest, 0).unwrap();
    assert_eq!(check(ApiKey::DescribeProducers, 0, &honest), Ok(()));
    assert_eq!(
        check(ApiKey::DescribeProducers, 0, &honest[..honest.len() - 1]),
        Err("request ends early")
    );
    // A compact array claiming 2^28 topics in a few bytes is refused before decoding.
    let lie = [0x80, 0x80, 0x80, 0x80, 0x01, 0x00];
    assert_eq!(
        check(ApiKey::DescribeProducers, 0, &lie),
        Err("array count exceeds the request size")
    );
    // A tagged field whose size runs past the end, and a varint of six bytes.
    assert_eq!(
        check(
            ApiKey::DescribeProducers,
            0,
            &[0x01, 0x01, 0x00, 0x7f, 0x00]
        ),
        Err("request ends early")
    );
    assert_eq!(
        check(
            ApiKey::DescribeProducers,
            0,
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        ),
        Err("varint overflows 32 bits")
    );
}

#[test]
fn the_body_of_a_flexible_request_starts_after_its_header_tags() {
    // key, version, correlation id, client id "ab", one tagged field (tag 0, 1 byte).
    let mut frame = vec![0, 22, 0, 4, 0, 0, 0, 1, 0, 2, b'a', b'b', 1, 0, 1, 9];
    frame.extend_from_slice(&[0xAA]);
    assert_eq!(body_offset(&frame, 1), Some(12));
    assert_eq!(body_offset(&frame, 2), Some(16));
    assert_eq!(body_offset(&frame[..14], 2), None, "tags cut short");
}

#[test]
fn acl_requests_as_kafka_protocol_writes_them_pass_and_cut_ones_do_not() {
    use kafka_protocol::messages::create_acls_request::AclCreation;
    use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
    use kafka_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
    use kafka_protocol::protocol::{Encodable, StrBytes};
    let mut creation = AclCreation::default();
    creation.resource_name = StrBytes::from_static_str("orders");
    creation.principal = StrBytes::from_static_str("User:alice");
    let mut create = CreateAclsRequest::default();
    create.creations = vec![creation.clone(), creation];
    let mut filter = DeleteAclsFilter::default();
    filter.resource_name_filter = None;
    let mut delete = DeleteAclsRequest::default();
    delete.filters = vec![filter];
    let mut describe = DescribeAclsRequest::default();
    describe.principal_filter = Some(StrBytes::from_static_str("User:alice"));
    for version in 1..=3 {
        fn encoded(request: &impl Encodable, version: i16) -> bytes::BytesMut {
            let mut body = bytes::BytesMut::new();
            request.encode(&mut body, version).unwrap();
            body
        }
        let bodies = [
            (ApiKey::CreateAcls, encoded(&create, version)),
            (ApiKey::DeleteAcls, encoded(&delete, version)),
            (ApiKey::DescribeAcls, encoded(&describe, version)),
        ];
        for (key, body) in bodies {
            assert_eq!(check(key, version, &body), Ok(()), "{key:?} v{version}");
            assert!(
                check(key, version, &body[..body.len() - 1]).is_err(),
                "{key:?} v{version} cut short"
            );
        }
    }
}

#[test]
fn a_known_tagged_field_must_take_exactly_its_declared_size() {
    // Fetch v17 with one topic (by id) of one partition, whose tag 0 (a 16-byte directory
    // id) declares 2 bytes: the codec would read 16 and then take later bytes for counts.
    let body = |size: u8, id_len: usize| {
        let mut b = Vec::new();
        b.extend_from_slice(&[0; 4]); // max_wait_ms
        b.extend_from_slice(&[0; 4]); // min_bytes
        b.extend_from_slice(&[0; 4]); // max_bytes
        b.push(0); // isolation_level
        b.extend_from_slice(&[0; 8]); // session id and epoch
        b.push(2); // one topic
        b.extend_from_slice(&[7; 16]); // its id
        b.push(2); // one partition
        b.extend_from_slice(&[0; 4 + 4 + 8 + 4 + 8 + 4]); // its fixed fields
        b.extend_from_slice(&[1, 0, size]); // one tag: 0, of `size` bytes
        b.extend_from_slice(&vec![0; id_len]);
        b.push(0); // the topic's tags
        b.push(1); // no forgotten topics
        b.push(1); // rack id ""
        b.push(0); // the request's tags
        b
    };
    assert_eq!(check(ApiKey::Fetch, 17, &body(16, 16)), Ok(()));
    assert!(check(ApiKey::Fetch, 17, &body(2, 2)).is_err());
}

#[test]
fn honest_requests_pass() {
    let mut metadata = 2i32.to_be_bytes().to_vec();
    for name in ["a", "bc"] {
        metadata.extend_from_slice(&(name.len() as i16).to_be_bytes());
        metadata.extend_from_slice(name.as_bytes());
    }
    metadata.push(1); // allow auto creation
    assert_eq!(check(ApiKey::Metadata, 4, &metadata), Ok(()));
    assert_eq!(
        check(ApiKey::Metadata, 1, &(-1i32).to_be_bytes()),
        Ok(()),
        "null means all topics"
    );
    assert_eq!(
        check(ApiKey::Metadata, 4, &metadata[..metadata.len() - 2]),
        Err("request ends early")
    );
}

mod decode_never_panics {
    use bytes::Bytes;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Random bodies behind every served API key and version: decoding returns a request or
        /// an error, never a panic and never a huge allocation.
        #[test]
        fn random_frames_decode_or_fail_cleanly(
            served in 0usize..crate::versions::SUPPORTED.len(),
            version_offset in 0i16..12,
            client_id in proptest::option::of("[a-z]{0,8}"),
            body in proptest::collection::vec(any::<u8>(), 0..64),
            lies in proptest::collection::vec((0usize..64, any::<i32>()), 0..3),
        ) {
            let (key, min, max) = crate::versions::SUPPORTED[served];
            let version = (min + version_offset).min(max);
            let mut frame = Vec::new();
            frame.extend_from_slice(&(key as i16).to_be_bytes());
            frame.extend_from_slice(&version.to_be_bytes());
            frame.extend_from_slice(&1i32.to_be_bytes());
            match &client_id {
                Some(id) => {
                    frame.extend_from_slice(&(id.len() as i16).to_be_bytes());
                    frame.extend_from_slice(id.as_bytes());
                }
                None => frame.extend_from_slice(&(-1i16).to_be_bytes()),
            }
            let mut body = body;
            // Plant large counts where arrays might start.
            for (at, value) in lies {
                if at + 4 <= body.len() {
                    body[at..at + 4].copy_from_slice(&value.to_be_bytes());
                }
            }
            frame.extend_from_slice(&body);
            let _ = crate::decode_request(Bytes::from(frame));
        }
    }
}
