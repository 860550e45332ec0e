// The C++ list of messages (messages/message_list.hpp) against the schema it mirrors, read
// through Cap'n Proto's compiled schema reflection.
#include "messages/codec.hpp"
#include "messages/deepcee.capnp.h"
#include "messages/message_list.hpp"

#include <boost/test/unit_test.hpp>

#include <capnp/schema.h>

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

using namespace deepcee::messages;

namespace {

struct listed {
  std::string_view kind;
  uint64_t schema_id; ///< of the schema struct the entry names
};

/// The list's entries in their order. Naming wire::SchemaStruct here also checks, when this
/// compiles, that every entry's schema struct exists.
const std::vector<listed> the_list = {
#define DEEPCEE_LISTED(type, kind, schema) {#kind, capnp::typeId<wire::schema>()},
    DEEPCEE_WIRE_MESSAGES(DEEPCEE_LISTED)
#undef DEEPCEE_LISTED
};

/// "job_deployment" as the schema spells its member: "jobDeployment".
std::string camel_case(std::string_view snake) {
  std::string out;
  bool upper = false;
  for (char c : snake) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(message_list)

BOOST_AUTO_TEST_CASE(every_envelope_member_is_listed_at_its_discriminant) {
  const auto members = capnp::Schema::from<wire::Envelope>().getUnionFields();
  BOOST_REQUIRE_EQUAL(members.size(), the_list.size());
  for (const auto member : members) {
    const auto proto = member.getProto();
    const std::string name = proto.getName().cStr();
    const size_t at = proto.getDiscriminantValue();
    BOOST_REQUIRE_LT(at, the_list.size());
    const auto& entry = the_list[at];
    BOOST_TEST_CONTEXT("Envelope member " << name) {
      BOOST_CHECK_EQUAL(camel_case(entry.kind), name);
      BOOST_REQUIRE(member.getType().isStruct());
      BOOST_CHECK_EQUAL(member.getType().asStruct().getProto().getId(), entry.schema_id);
      BOOST_CHECK_EQUAL(to_string(static_cast<message_kind>(at)), entry.kind);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_listed_type_encodes_as_its_kind){
#define DEEPCEE_CHECK_KIND(type, kind, schema)                                                     \
  {                                                                                                \
    const auto got = peek_kind(encode(type{}));                                                    \
    BOOST_REQUIRE_MESSAGE(got.ok(), #type ": " << (got.ok() ? "" : got.error().what));             \
    BOOST_CHECK_MESSAGE(*got == message_kind::kind, #type " encodes as " << to_string(*got));      \
  }
    DEEPCEE_WIRE_MESSAGES(DEEPCEE_CHECK_KIND)
#undef DEEPCEE_CHECK_KIND
}

BOOST_AUTO_TEST_SUITE_END()
