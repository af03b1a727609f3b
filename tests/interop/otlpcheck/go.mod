module ember/tests/interop/otlpcheck

go 1.24.0

require (
	go.opentelemetry.io/proto/otlp v1.10.0
	go.opentelemetry.io/proto/otlp/collector/profiles/v1development v0.3.0
	go.opentelemetry.io/proto/otlp/profiles/v1development v0.3.0
	google.golang.org/protobuf v1.36.11
)

require (
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.28.0 // indirect
	golang.org/x/net v0.50.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
	golang.org/x/text v0.34.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260209200024-4cfbd4190f57 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260209200024-4cfbd4190f57 // indirect
	google.golang.org/grpc v1.79.2 // indirect
)
