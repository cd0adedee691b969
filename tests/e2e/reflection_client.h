// Test helper: a client of the server's reflection service (grpc.reflection.v1alpha, the version
// grpcurl uses), so e2e tests learn the schema the way grpcurl does: one stream, one request and
// one answer at a time.
#ifndef GPUBENCH_TESTS_E2E_REFLECTION_CLIENT_H_
#define GPUBENCH_TESTS_E2E_REFLECTION_CLIENT_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>

#include "e2e/protos/reflection.grpc.pb.h"

namespace gpubench {

class ReflectionClient {
 public:
  using Request = grpc::reflection::v1alpha::ServerReflectionRequest;
  using Response = grpc::reflection::v1alpha::ServerReflectionResponse;

  explicit ReflectionClient(const std::shared_ptr<grpc::Channel>& channel,
                            std::chrono::seconds deadline = std::chrono::seconds(60))
      : stub_(grpc::reflection::v1alpha::ServerReflection::NewStub(channel)) {
    context_.set_deadline(std::chrono::system_clock::now() + deadline);
    stream_ = stub_->ServerReflectionInfo(&context_);
  }
  ~ReflectionClient() {
    if (!finished_) Finish();
  }

  // Sends `request` and reads its answer; false when the stream broke.
  bool Ask(const Request& request, Response* response) {
    return stream_->Write(request) && stream_->Read(response);
  }

  // The services the server lists (list_services); empty when the call failed.
  std::set<std::string> ListServices() {
    Request request;
    request.set_list_services("");
    Response response;
    std::set<std::string> services;
    if (!Ask(request, &response)) return services;
    for (const auto& s : response.list_services_response().service()) services.insert(s.name());
    return services;
  }

  // The files the server sends for `symbol` (file_containing_symbol: the file and the ones it
  // imports), each parsed; a failure says why.
  ::testing::AssertionResult FilesContainingSymbol(
      const std::string& symbol, std::vector<google::protobuf::FileDescriptorProto>* files) {
    Request request;
    request.set_file_containing_symbol(symbol);
    Response response;
    if (!Ask(request, &response)) return ::testing::AssertionFailure() << "stream broke";
    if (response.has_error_response()) {
      return ::testing::AssertionFailure() << symbol << ": "
                                           << response.error_response().error_message();
    }
    for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
      google::protobuf::FileDescriptorProto file;
      if (!file.ParseFromString(bytes)) return ::testing::AssertionFailure() << "bad descriptor";
      files->push_back(std::move(file));
    }
    return ::testing::AssertionSuccess();
  }

  // As FilesContainingSymbol, and builds them into `pool` (dependencies are sent first).
  ::testing::AssertionResult LoadSymbol(const std::string& symbol,
                                        google::protobuf::DescriptorPool* pool) {
    std::vector<google::protobuf::FileDescriptorProto> files;
    if (auto got = FilesContainingSymbol(symbol, &files); !got) return got;
    for (const auto& file : files) {
      if (pool->FindFileByName(file.name()) != nullptr) continue;
      if (pool->BuildFile(file) == nullptr) {
        return ::testing::AssertionFailure() << "cannot build " << file.name();
      }
    }
    return ::testing::AssertionSuccess();
  }

  // Half-closes the stream and returns the call's status.
  grpc::Status Finish() {
    finished_ = true;
    stream_->WritesDone();
    return stream_->Finish();
  }

 private:
  std::unique_ptr<grpc::reflection::v1alpha::ServerReflection::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<Request, Response>> stream_;
  bool finished_ = false;
};

}  // namespace gpubench

#endif  // GPUBENCH_TESTS_E2E_REFLECTION_CLIENT_H_
