"""What a README says its code is: its first paragraph that says something, past badges,
images and link lines, never a section's paragraph."""

from __future__ import annotations

from substrate.connectors.designdocs import described_subject, opening_lines, project_names
from substrate.connectors.markdown import heading_text, parse_markdown, project_title, title


def opening(text: str) -> list[int]:
    return [no for no, _ in opening_lines(parse_markdown(text).body)]


def test_badges_and_images_are_passed_over() -> None:
    """Adyen's notification module opens with a Docker Pulls badge."""
    text = ("# Notification Module\n![Docker Pulls](https://img.shields.io/docker/pulls/x)\n\n"
            "Notification module is a part of the integration\nwhich receives notifications.\n")
    assert opening(text) == [4, 5]
    assert opening("# x\n\n[![CI](https://b/ci.svg)](https://b/ci) [![cov](https://c.svg)](x)"
                   "\n\nThe x service keeps carts for shoppers who come back later.\n") == [5]


def test_a_table_under_the_title_is_passed_over() -> None:
    """retail-store-sample-app's catalog README opens with a | Language | Persistence | table
    (its facts are read by readme_tables); the sentence after it says what the service is."""
    text = ("# Catalog Service\n\n| Language | Persistence |\n| -- | -- |\n| Go | MySQL |\n\n"
            "This service provides an API for retrieving product catalog information.\n")
    assert opening(text) == [7]


def test_a_lone_badge_linking_to_a_bare_host_is_passed_over() -> None:
    """The badge's link ends with the host: its ")" is not part of the URL."""
    assert opening("# x\n\n[![CI](https://ci.example.com/badge.svg)](https://ci.example.com)"
                   "\n\nThe x service keeps carts.\n") == [5]


def test_html_layout_comments_and_headings_are_passed_over() -> None:
    """retail-store-sample-app centres a banner and an <h2> title; Bank of Anthos opens on
    HTML comments and a badge whose link spans two lines."""
    retail = ('![Banner](./banner.png)\n\n<div align="center">\n  <div align="center">\n\n'
              "  </div>\n\n  <strong>\n  <h2>AWS Retail Sample</h2>\n  </strong>\n</div>\n\n"
              "This is a sample application.\n")
    assert opening(retail) == [13]
    boa = ("# Bank of Anthos\n\n<!-- a badge, commented out -->\n<!-- ![b](https://b/x) -->\n"
           "[![Website](https://img/x?label=live%20demo\n)](https://cymbal.dev)\n\n"
           "**Bank of Anthos** is a sample HTTP-based web app.\n")
    assert opening(boa) == [8]


def test_a_link_line_then_a_section_gives_nothing() -> None:
    """Adyen's extension README: a link line, then "## Requirements ..." sections."""
    text = ("# Front-end integration guide\nAdyen documentation for common workflow: "
            "https://docs.adyen.com/x\n\n## Requirements for CTP project:\nAll the "
            "requirements above should be created.\n")
    assert opening(text) == []


def test_a_plain_first_paragraph_stays_first() -> None:
    assert opening("# cart\n\nKeeps carts. See https://example.com/docs for more.\n") == [3]
    assert opening("# cart\n\n## Overview\n\nKeeps carts.\n") == [5]


def test_an_html_title_above_the_markdown_headings_names_the_page() -> None:
    """retail-store-sample-app's README opens with a banner and a centred <h2> title; its
    first Markdown heading is a section ("## Application Architecture")."""
    text = ('![Banner](./banner.png)\n\n<div align="center">\n  <strong>\n'
            '  <h2>AWS Containers <em>Retail</em> Sample</h2>\n  </strong>\n</div>\n\n'
            "## Application Architecture\n\nThe application has been deliberately ...\n")
    assert title(parse_markdown(text).body) == ("AWS Containers Retail Sample", 5)
    fenced = "```html\n<h1>Not a title</h1>\n```\n\n# Real title\n"
    assert title(parse_markdown(fenced).body) == ("Real title", 5)
    below = "# Service\n\n<h2>Detail</h2>\n"  # under a Markdown heading: not the title
    assert title(parse_markdown(below).body) == ("Service", 1)
    assert title(parse_markdown("<h1></h1>\n\n## Setup\n").body) == ("Setup", 3)


def test_a_logo_naming_the_project_titles_a_readme_with_no_level_one_heading() -> None:
    """Online Boutique opens with a centred logo (alt="Online Boutique"), a badge and a
    Log4j notice in a blockquote, then its description; its first heading is a section."""
    text = ('<p align="center">\n<img src="logo.svg" width="300" alt="Online Boutique" />\n'
            "</p>\n\n![CI](https://ci.example.com/badge.svg)\n\n"
            "> **ATTENTION: Apache Log4j 2 advisory.**\n> we took down affected images.\n\n"
            "**Online Boutique** is a cloud-native microservices demo application.\n\n"
            "## Screenshots\n\nSee below.\n")
    body = parse_markdown(text).body
    assert title(body) == ("Online Boutique", 2)
    assert project_title(body) == ("Online Boutique", 2)
    assert opening(text) == [10]  # past the notice
    # a generic picture names nothing: the first heading stays the last resort of title(),
    # and no project name comes of it
    plain = '<img src="logo.png" alt="logo">\n\n## Setup\n\nRun it.\n'
    assert title(parse_markdown(plain).body) == ("Setup", 3)
    assert project_title(parse_markdown(plain).body) is None
    # a level-1 heading names the page before any logo
    headed = '<img src="x.png" alt="Old Name">\n\n# New Name\n'
    assert title(parse_markdown(headed).body) == ("New Name", 3)


def test_a_project_answers_to_its_title_and_to_the_name_before_its_tagline() -> None:
    assert project_names("Sock Shop : A Microservice Demo Application") == [
        "Sock Shop : A Microservice Demo Application", "Sock Shop"]
    assert project_names("**Bank of Anthos**") == ["Bank of Anthos"]
    assert project_names("FAC: Federal Audit Clearinghouse") == [
        "FAC: Federal Audit Clearinghouse", "FAC"]
    assert project_names("manage.get.gov") == ["manage.get.gov"]
    assert project_names("Kubernetes-native app") == ["Kubernetes-native app"]  # no tagline


def test_a_headings_badges_and_html_are_not_the_pages_name() -> None:
    """alphagov/gsp: "# GSP [![IRC](...)]() <img ... alt="gsp">" is titled GSP."""
    text = ('# GSP [![IRC](https://img.shields.io/badge/k8s-v1.14-0099ef.svg)]() '
            '<img align="right" src="./docs/assets/gsp.png" alt="gsp" width="30%">\n\n'
            "GSP is a Kubernetes distribution.\n")
    assert title(parse_markdown(text).body) == ("GSP", 1)
    assert heading_text("Plain title") == "Plain title"


def test_the_name_a_readmes_opening_sentence_gives_its_subject() -> None:
    """rubyforgood/casa's README is titled "CASA Project and Organization Overview" and opens
    "CASA (Court Appointed Special Advocate) is a role ...": "What is CASA?" names it."""
    assert described_subject("CASA (Court Appointed Special Advocate) is a role fulfilled "
                             "by a trained volunteer.") == "CASA"
    assert described_subject("**Online Boutique** is a cloud-native microservices demo "
                             "application.") == "Online Boutique"
    assert described_subject("Stan's Robot Shop is a sample microservice application.") \
        == "Stan's Robot Shop"
    assert described_subject("The application is the user-facing part of a shop.") is None
    assert described_subject("This repository contains the platform.") is None
