"""Datastore clients declared by build files (connectors/data_clients.py): each ecosystem's
way of naming a dependency, and which dependencies are clients of which product."""

from __future__ import annotations

import pytest

from substrate.connectors.data_clients import (
    build_facts,
    declared,
    framework_of,
    is_fact_build_file,
    product_of,
)


def test_maven_dependencies_by_artifact_id_with_their_lines() -> None:
    pom = ("<project>\n  <artifactId>customers</artifactId>\n  <dependencies>\n"
           "    <dependency>\n      <groupId>com.mysql</groupId>\n"
           "      <artifactId>mysql-connector-j</artifactId>\n    </dependency>\n"
           "  </dependencies>\n</project>\n")
    # the project's own artifactId (line 2) is no dependency
    assert declared("pom.xml", pom) == [("mysql-connector-j", 6)]


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("build.gradle", "dependencies {\n  implementation 'org.postgresql:postgresql:42.7.1'\n"
     "  testImplementation 'junit:junit:4.13'\n}\n", [("postgresql", 2)]),
    ("package.json", '{\n  "name": "cart",\n  "dependencies": {\n    "redis": "^4.0",\n'
     '    "express": "^4.18"\n  },\n  "devDependencies": {"mongodb": "6"}\n}\n',
     [("redis", 4), ("express", 5)]),
    ("requirements.txt", "Flask==2.0\npsycopg2-binary>=2.9\n# pika\nredis[hiredis]\n",
     [("Flask", 1), ("psycopg2-binary", 2), ("redis", 4)]),
    ("go.mod", "module dispatch\n\ngo 1.17\n\nrequire (\n\tgithub.com/streadway/amqp v1.0.0\n"
     ")\n", [("github.com/streadway/amqp", 6)]),
    ("Gemfile", "source 'https://rubygems.org'\ngem 'rails'\ngem \"pg\", '~> 1.5'\n",
     [("rails", 2), ("pg", 3)]),
    ("composer.json", '{"require": {"php": ">=7.3", "predis/predis": "^2.0"}}',
     [("php", 1), ("predis/predis", 1)]),
])
def test_each_ecosystem_s_dependencies(name: str, text: str,
                                       expected: list[tuple[str, int]]) -> None:
    assert declared(name, text) == expected


@pytest.mark.parametrize(("dependency", "product"), [
    ("mysql-connector-j", "MySQL"), ("hsqldb", "HSQLDB (embedded)"), ("pg", "PostgreSQL"),
    ("psycopg2-binary", "PostgreSQL"), ("spring-boot-starter-data-mongodb", "MongoDB"),
    ("ioredis", "Redis"), ("github.com/redis/go-redis/v9", "Redis"), ("pika", "RabbitMQ"),
    ("spring-kafka", "Kafka"), ("express", None), ("spring-boot-starter-data-jpa", None),
    ("redis-om-spring-extras", None)])
def test_which_product_a_dependency_is_a_client_of(dependency: str, product: str | None) -> None:
    assert product_of(dependency) == product


def test_the_replay_reads_a_build_file_change_only_when_what_is_taken_changes() -> None:
    """Another dependency's bump keeps the digest (the commit is skipped); a new client, a
    client moved to another line, its own line changed (the evidence cites the commit that
    last changed it: a bump of "pg" in place) or a new language version changes it."""
    before = '{\n  "dependencies": {\n    "pg": "^8.0",\n    "lodash": "^4"\n  }\n}\n'
    other = before.replace("^4", "^5")
    bumped = before.replace("^8.0", "^8.11")
    added = before.replace('"lodash"', '"ioredis": "^5",\n    "lodash"')
    moved = before.replace('{\n  "dependencies"', '{\n  "name": "x",\n  "dependencies"')
    def facts(text: str, name: str = "package.json") -> tuple[tuple[str, int], ...]:
        return build_facts(name, text)

    assert facts(before) == facts(other) != ()
    assert facts(bumped) != facts(before)
    assert facts(added) != facts(before)
    assert facts(moved) != facts(before)
    assert facts('{"dependencies": {"lodash": "^4"}}') == ()
    assert facts("module x\n\ngo 1.21\n", "go.mod") != facts("module x\n\ngo 1.22\n", "go.mod")


@pytest.mark.parametrize(("dependency", "framework"), [
    ("flask", "Flask"), ("Django", "Django"), ("@nestjs/core", "NestJS"), ("express", "Express"),
    ("spring-boot-starter-web", "Spring Boot"), ("github.com/gin-gonic/gin", "Gin"),
    ("rails", "Ruby on Rails"), ("symfony/framework-bundle", "Symfony"),
    ("flask-cors", None), ("express-session", None), ("pg", None)])
def test_which_framework_a_dependency_is(dependency: str, framework: str | None) -> None:
    assert framework_of(dependency) == framework



def test_a_dotnet_project_s_sdk_and_packages() -> None:
    project = ('<Project Sdk="Microsoft.NET.Sdk.Web">\n  <ItemGroup>\n'
               '    <PackageReference Include="Aspire.StackExchange.Redis" />\n'
               '    <PackageReference Include="Grpc.AspNetCore" Version="2.60.0" />\n'
               '  </ItemGroup>\n</Project>\n')
    assert declared("Basket.API.csproj", project) == [
        ("Microsoft.NET.Sdk.Web", 1), ("Aspire.StackExchange.Redis", 3), ("Grpc.AspNetCore", 4)]


@pytest.mark.parametrize(("dependency", "found"), [
    ("Aspire.Npgsql.EntityFrameworkCore.PostgreSQL", "PostgreSQL"),
    ("Npgsql.EntityFrameworkCore.PostgreSQL", "PostgreSQL"),
    ("Aspire.StackExchange.Redis.OutputCaching", "Redis"),
    ("Aspire.RabbitMQ.Client", "RabbitMQ"), ("Confluent.Kafka", "Kafka"),
    ("Microsoft.EntityFrameworkCore.SqlServer", "SQL Server"), ("mssql-jdbc", "SQL Server"),
    ("MongoDB.Driver", "MongoDB"), ("Aspire.Azure.Messaging.ServiceBus", "Azure Service Bus"),
    ("Microsoft.EntityFrameworkCore", None), ("Grpc.AspNetCore", None)])
def test_which_product_a_dotnet_package_is_a_client_of(dependency: str, found: str | None
                                                       ) -> None:
    assert product_of(dependency) == found


@pytest.mark.parametrize(("sdk", "framework"), [
    ("Microsoft.NET.Sdk.Web", "ASP.NET Core"), ("Microsoft.NET.Sdk.Worker", ".NET Worker Service"),
    ("Microsoft.NET.Sdk", None), ("Microsoft.NET.Sdk.Razor", None), ("Yarp.ReverseProxy", "YARP")])
def test_which_framework_a_dotnet_sdk_is(sdk: str, framework: str | None) -> None:
    assert framework_of(sdk) == framework


def test_a_dotnet_project_s_facts_count_for_the_replay() -> None:
    """A project file's packages and target framework are read (a replay re-reads a commit
    that changes them); a ``Directory.Build.props`` above the projects too."""
    before = ('<Project Sdk="Microsoft.NET.Sdk">\n  <PropertyGroup>\n'
              '    <TargetFramework>net8.0</TargetFramework>\n  </PropertyGroup>\n'
              '  <ItemGroup>\n    <PackageReference Include="Npgsql" />\n'
              '    <PackageReference Include="Polly" />\n  </ItemGroup>\n</Project>\n')
    assert is_fact_build_file("src/Ordering.API/Ordering.API.csproj")
    assert is_fact_build_file("Directory.Build.props")
    assert build_facts("X.csproj", before) == build_facts("X.csproj",
                                                          before.replace("Polly", "Dapper"))
    assert build_facts("X.csproj", before) != build_facts("X.csproj",
                                                          before.replace("net8.0", "net9.0"))
    assert build_facts("X.csproj", before) != build_facts("X.csproj",
                                                          before.replace("Npgsql", "Dapper"))
