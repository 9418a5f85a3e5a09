//! Where a provider's probe endpoint points, and whether validators may probe it.
//!
//! Validators' off-chain workers GET every provider's endpoint and publish whether it answered,
//! so an endpoint aimed inside the validator's own network (its RPC on loopback, a private
//! range, the cloud metadata service on a link-local address) would turn them into a port
//! scanner whose findings go on chain. Only endpoints whose host is a public IP address are
//! probed; loopback is allowed where the chain says so (development and local test chains,
//! whose providers all run on one machine). DNS names are refused: a name can be pointed at
//! any address after the chain checked it, and the off-chain worker cannot pin what it
//! resolves to.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What an endpoint URL's host is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EndpointHost {
	/// A public (globally routable) IP address.
	Public,
	/// A loopback address (`127.0.0.0/8`, `::1`).
	Loopback,
	/// Any other address that is not public: private, link-local, shared (CGNAT),
	/// unspecified, multicast, reserved or documentation ranges.
	Internal,
	/// A DNS name (or anything else that is not an IP literal).
	Name,
}

/// Why an endpoint is refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EndpointError {
	/// Not UTF-8 text of the form `http(s)://host[:port][/path]`.
	NotHttpUrl,
	/// Its host is not a public IP address (loopback only where allowed).
	NotPublic,
}

/// The host of an `http(s)://` URL, classified; `None` when it is not such a URL.
pub fn endpoint_host(url: &[u8]) -> Option<EndpointHost> {
	let url = core::str::from_utf8(url).ok()?;
	let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"))?;
	let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
	// Credentials (`user@host`) are no part of a probe endpoint: refuse them outright.
	if authority.is_empty() || authority.contains('@') {
		return None;
	}
	let host = match authority.strip_prefix('[') {
		Some(bracketed) => bracketed.split(']').next()?,
		None => authority.split(':').next()?,
	};
	if host.is_empty() {
		return None;
	}
	Some(match host.parse::<IpAddr>() {
		Ok(IpAddr::V4(ip)) => classify_v4(ip),
		Ok(IpAddr::V6(ip)) => classify_v6(ip),
		Err(_) => EndpointHost::Name,
	})
}

/// Whether validators may probe `url`: a public IP host, or loopback when `allow_loopback`.
pub fn check_endpoint(url: &[u8], allow_loopback: bool) -> Result<(), EndpointError> {
	match endpoint_host(url).ok_or(EndpointError::NotHttpUrl)? {
		EndpointHost::Public => Ok(()),
		EndpointHost::Loopback if allow_loopback => Ok(()),
		_ => Err(EndpointError::NotPublic),
	}
}

fn classify_v4(ip: Ipv4Addr) -> EndpointHost {
	let [a, b, c, _] = ip.octets();
	if a == 127 {
		return EndpointHost::Loopback;
	}
	let internal = a == 0 // "this network"
		|| a == 10 // private
		|| (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
		|| (a == 169 && b == 254) // link-local, cloud metadata
		|| (a == 172 && (16..32).contains(&b)) // private
		|| (a == 192 && b == 0 && c == 0) // IETF protocol assignments
		|| (a == 192 && b == 0 && c == 2) // documentation
		|| (a == 192 && b == 168) // private
		|| (a == 198 && (b == 18 || b == 19)) // benchmarking
		|| (a == 198 && b == 51 && c == 100) // documentation
		|| (a == 203 && b == 0 && c == 113) // documentation
		|| a >= 224; // multicast, reserved, broadcast
	if internal {
		EndpointHost::Internal
	} else {
		EndpointHost::Public
	}
}

fn classify_v6(ip: Ipv6Addr) -> EndpointHost {
	if ip == Ipv6Addr::LOCALHOST {
		return EndpointHost::Loopback;
	}
	// An IPv4 address written as IPv6 is what it maps to.
	if let Some(v4) = ip.to_ipv4_mapped() {
		return classify_v4(v4);
	}
	let [first, second, third, ..] = ip.segments();
	// 6to4 (2002::/16) carries an IPv4 address in its next 32 bits, and a host with a 6to4
	// relay reaches that address through it: it is what that address is (a public-looking
	// 2002:7f00:1:: is 127.0.0.1, and never loopback for the chain's allowance).
	if first == 0x2002 {
		let [a, b] = second.to_be_bytes();
		let [c, d] = third.to_be_bytes();
		return match classify_v4(Ipv4Addr::new(a, b, c, d)) {
			EndpointHost::Public => EndpointHost::Public,
			_ => EndpointHost::Internal,
		};
	}
	// Only global unicast (2000::/3) is public, less documentation (2001:db8::/32) and the
	// IETF protocol assignments (2001::/23: Teredo's 2001::/32, whose client address is
	// hidden in the rest, benchmarking and ORCHID ranges), which are not hosts to probe.
	let global_unicast = first & 0xe000 == 0x2000;
	let documentation = first == 0x2001 && second == 0x0db8;
	let protocol_assignments = first == 0x2001 && second < 0x0200;
	if global_unicast && !documentation && !protocol_assignments {
		EndpointHost::Public
	} else {
		EndpointHost::Internal
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn host(url: &str) -> Option<EndpointHost> {
		endpoint_host(url.as_bytes())
	}

	#[test]
	fn public_addresses_are_public() {
		for url in [
			"http://8.8.8.8/health",
			"https://1.1.1.1:8443/health",
			"http://[2606:4700:4700::1111]:9000/health",
			"http://[2002:808:808::1]/", // 6to4 of 8.8.8.8
			"http://[2001:4860:4860::8888]/",
			"http://93.184.216.34",
		] {
			assert_eq!(host(url), Some(EndpointHost::Public), "{url}");
		}
	}

	#[test]
	fn addresses_inside_a_validators_network_are_not() {
		// What an attacker would aim a validator's probe at.
		for url in [
			"http://169.254.169.254/latest/meta-data/", // cloud metadata
			"http://10.0.0.5:9944/",
			"http://172.16.3.4/",
			"http://172.31.255.255/",
			"http://192.168.1.1/",
			"http://100.64.0.1/",
			"http://0.0.0.0:9944/",
			"http://224.0.0.1/",
			"http://255.255.255.255/",
			"http://[fd00::1]/",
			"http://[fe80::1]/",
			"http://[::]/",
			"http://[::ffff:10.0.0.1]/", // IPv4-mapped private
			"http://[2001:db8::1]/",
			"http://[2002:7f00:1::]:9944/", // 6to4 of 127.0.0.1
			"http://[2002:a9fe:a9fe::1]/",  // 6to4 of the metadata address
			"http://[2002:c0a8:101::]/",    // 6to4 of 192.168.1.1
			"http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", // Teredo
			"http://[2001:2::1]/",          // benchmarking
			"http://[64:ff9b::a00:1]/",     // NAT64 of 10.0.0.1
		] {
			assert_eq!(host(url), Some(EndpointHost::Internal), "{url}");
		}
		for url in ["http://127.0.0.1:9944/", "http://127.8.9.10/", "http://[::1]:9000/"] {
			assert_eq!(host(url), Some(EndpointHost::Loopback), "{url}");
		}
		// Names and numeric tricks resolvers accept are not IP literals here.
		for url in [
			"http://localhost:9944/",
			"http://metadata.google.internal/",
			"http://2130706433/", // 127.0.0.1 as one number
			"http://0177.0.0.1/", // octal
			"http://127.1/",
			"http://0x7f.0.0.1/",
			"http://example.com/",
		] {
			assert_eq!(host(url), Some(EndpointHost::Name), "{url}");
		}
	}

	#[test]
	fn only_http_urls_with_a_host_and_no_credentials_parse() {
		for url in ["ftp://8.8.8.8/", "http://", "http:///x", "8.8.8.8", "http://u:p@8.8.8.8/"] {
			assert_eq!(host(url), None, "{url}");
		}
		assert_eq!(endpoint_host(&[0xff, 0xfe]), None);
	}

	#[test]
	fn loopback_is_allowed_only_when_the_chain_says_so() {
		let local = b"http://127.0.0.1:9000/health";
		assert_eq!(check_endpoint(local, false), Err(EndpointError::NotPublic));
		assert_eq!(check_endpoint(local, true), Ok(()));
		assert_eq!(check_endpoint(b"http://10.1.2.3/", true), Err(EndpointError::NotPublic));
		assert_eq!(check_endpoint(b"http://example.com/", true), Err(EndpointError::NotPublic));
		assert_eq!(check_endpoint(b"http://8.8.8.8/", false), Ok(()));
		assert_eq!(check_endpoint(b"gopher://8.8.8.8/", true), Err(EndpointError::NotHttpUrl));
	}
}
