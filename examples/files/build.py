"""Rebuild the mixed-format example folder: one file of each kind qmd-nb reads (md, txt, pdf, docx, html).

The README indexes it (`qmd-nb source add -s examples/files ...`, `qmd-nb ingest examples/files/report.pdf ...`) and
tests/test_readme.py checks that a folder like it is indexed whole by the default mask.
Run: .venv/bin/python examples/files/build.py (needs fpdf2 and python-docx, both installed by tools/setup.sh)."""
from pathlib import Path
from fpdf import FPDF
import docx

HERE = Path(__file__).parent

def pdf(path:Path):
    p = FPDF(); p.set_title('Quarterly storage report'); p.set_author('Ana'); p.set_creation_date(__import__('datetime').datetime(2025, 7, 1))
    p.set_font('helvetica', size=11)
    for text in ("Quarterly storage report\n\nThe NAS mirror holds 5.1 TB of 8 TB. Growth was 300 GB this quarter, "
                 "most of it photos. At this rate the mirror is full in about two years.",
                 "Restore drill\n\nThe July restore drill passed: a random folder from each copy was restored and its "
                 "checksums matched. Next drill: January."):
        p.add_page(); p.multi_cell(0, 6, text)
    p.output(str(path))

def word(path:Path):
    d = docx.Document(); d.core_properties.title = 'Disk replacement memo'; d.core_properties.author = 'Ben'
    d.add_heading('Disk replacement memo', 1)
    d.add_paragraph('The two 8 TB drives arrived. Replace one disk at a time and let the mirror resilver in between.')
    d.add_paragraph('Wipe the old disks with a full overwrite before they leave the house.')
    d.save(str(path))

def write_all():
    pdf(HERE/'report.pdf'); word(HERE/'memo.docx')
    (HERE/'runbook.html').write_text('<html><head><title>NAS runbook</title></head><body><h1>NAS runbook</h1>'
        '<p>If the NAS does not answer, check the switch port first, then the power supply.</p>'
        '<h2>Snapshots</h2><p>Hourly snapshots are kept for two days, daily ones for a month.</p></body></html>\n', encoding='utf-8')
    (HERE/'checklist.md').write_text('# Monthly checklist\n\n- Swap the off-site disk.\n- Read the SMART report of every disk.\n'
                                     '- Check that last night\'s backup finished.\n', encoding='utf-8')
    (HERE/'inventory.txt').write_text('Inventory of the home lab\n\nNAS: four-bay unit, two 8 TB drives (mirror)\n'
                                      'Router: fanless, 4 ports\nUPS: 600 VA, runs the NAS for 20 minutes\n', encoding='utf-8')

if __name__ == '__main__': write_all()
